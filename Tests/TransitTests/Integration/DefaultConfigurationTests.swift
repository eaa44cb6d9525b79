import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitTesting

/// `URLSessionTransport`'s default configuration: no cookie jar, no `URLCache`.
@Suite("URLSessionTransport's default configuration")
struct DefaultConfigurationTests {
    @Test func theDefaultConfigurationHasNoCookieJarAndNoCache() {
        let configuration = URLSessionTransport.defaultConfiguration
        #expect(configuration.httpCookieAcceptPolicy == .never)
        #expect(!configuration.httpShouldSetCookies)
        #expect(configuration.httpCookieStorage == nil)
        #expect(configuration.urlCache == nil)
    }

    /// Sends two requests to a server whose first answer sets a cookie and returns the second
    /// request as the server saw it.
    private func secondRequest(on transport: URLSessionTransport) async throws -> LoopbackRequest {
        try await withLoopbackServer { server in
            server.enqueue(.status(200, headers: ["Set-Cookie": "session=abc123; Path=/"], body: Data("one".utf8)))
            server.enqueue(.status(200, body: Data("two".utf8)))
            _ = try await sendAndWait(transport, URLRequest(url: server.url("/login")))
            _ = try await sendAndWait(transport, URLRequest(url: server.url("/next")))
            return try #require(server.requests.last)
        }
    }

    @Test func aCookieSetByAServerIsNotSentBack() async throws {
        let request = try await secondRequest(on: URLSessionTransport())
        #expect(request.path == "/next")
        #expect(request.value(forHTTPHeaderField: "Cookie") == nil)
    }

    @Test func aConfigurationWithACookieJarSendsItBack() async throws {
        // The control: the same exchange with Foundation's own cookie handling on (an ephemeral
        // session has a cookie jar of its own, so nothing leaks into other tests).
        let request = try await secondRequest(on: URLSessionTransport(configuration: .ephemeral))
        #expect(request.value(forHTTPHeaderField: "Cookie") == "session=abc123")
    }
}
