import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Defect: a fluent helper that refused its input stored the refusal in a
/// `Transit-Rejected-Input` header, which a plain `URLSession` then sent to the server. The
/// helpers that can refuse input now throw at once, and no header carries Transit's metadata.
@Suite("Refused input is thrown, never carried in a header")
struct RefusedInputTests {
    let original = URLRequest(url: URL(string: "https://api.example.com/v1/items")!)

    @Test("each helper that can refuse its input throws the URLRequestError at once")
    func refusalsThrow() {
        #expect(throws: URLRequestError.invalidHeaderValue(name: "X-Trace")) {
            try original.addingValue("v\r\nX-Injected: 1", forHTTPHeaderField: "X-Trace")
        }
        #expect(throws: URLRequestError.invalidHeaderValue(name: "X-Trace")) {
            try original.settingValue("v\n", forHTTPHeaderField: "X-Trace")
        }
        #expect(throws: URLRequestError.invalidHeaderName("X Trace")) {
            try original.settingValue("v", forHTTPHeaderField: "X Trace")
        }
        #expect(throws: URLRequestError.invalidHeaderValue(name: "Content-Type")) {
            try original.sendingBody(Data(), contentType: "text/plain\r\n")
        }
        #expect(throws: URLRequestError.invalidBearerToken) {
            try original.addingBearerAuthorization(accessToken: "")
        }
        #expect(throws: URLRequestError.invalidTimeout(0)) {
            try original.withTimeout(0)
        }
        #expect(throws: URLRequestError.invalidMethod("GE T")) {
            try original.withMethod("GE T")
        }
        var withoutURL = original
        withoutURL.url = nil
        #expect(throws: URLRequestError.invalidURL) {
            try withoutURL.addingQueryItem(name: "a", value: "1")
        }
    }

    @Test("a bearer token read from a file with its trailing newline throws invalidBearerToken")
    func bearerTokenWithTrailingNewline() {
        #expect(throws: URLRequestError.invalidBearerToken) {
            try original.addingBearerAuthorization(accessToken: "eyJhbGciOi.J9\n")
        }
        #expect(throws: URLRequestError.invalidBearerToken) {
            try original.addingBearerAuthorization(accessToken: "eyJhbGciOi.J9\r\n")
        }
    }

    @Test("no helper ever adds a header its caller did not ask for")
    func noMarkerHeader() {
        let attempts: [() throws -> URLRequest] = [
            { try original.addingValue("a\r\n", forHTTPHeaderField: "X-A") },
            { try original.addingBearerAuthorization(accessToken: "a b") },
            { try original.withTimeout(.nan) },
            { try original.withMethod("") },
        ]
        for attempt in attempts {
            let result = try? attempt()
            #expect(result == nil, "refused input must throw")
            #expect(result?.allHTTPHeaderFields?.isEmpty ?? true, "\(String(describing: result?.allHTTPHeaderFields))")
        }
    }

    @Test("a request built with the helpers and sent with a plain URLSession carries no Transit header")
    func plainURLSessionSeesNoMarker() async throws {
        let server = LoopbackServer { _ in .text("ok") }
        try server.start()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/items"))
        var refusal: (any Error)?
        do {
            request = try request.addingBearerAuthorization(accessToken: "tok\n")
        } catch {
            refusal = error
        }
        #expect(refusal as? URLRequestError == .invalidBearerToken)
        let status: Int = await withCheckedContinuation { continuation in
            URLSession.shared.dataTask(with: request) { _, response, _ in
                continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? -1)
            }.resume()
        }
        #expect(status == 200)
        let received = try #require(server.requests.first)
        #expect(received.headers.allSatisfy { !$0.name.lowercased().hasPrefix("transit") }, "\(received.headers)")
        #expect(received.value(forHTTPHeaderField: "Authorization") == nil)
    }
}
