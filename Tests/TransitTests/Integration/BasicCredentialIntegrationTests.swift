import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// ``BasicCredentials`` through `HTTPClient { $0.authorizer =  }` over `URLSessionTransport` and real
/// sockets: what the server receives, and what a 401 does.
@Suite("Basic credentials over loopback")
struct BasicCredentialIntegrationTests {
    /// `alice:pässwörd`, UTF-8, Base64.
    private static let header = "Basic YWxpY2U6cMOkc3N3w7ZyZA=="

    private func client() throws -> HTTPClient {
        let credentials = try BasicCredentials(
            username: "alice", password: "pässwörd",
            scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
        )
        return HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests())) { $0.authorizer = credentials }
    }

    private func authorizationFields(of request: LoopbackRequest) -> [String] {
        request.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value)
    }

    @Test func theServerReceivesExactlyTheBasicHeader() async throws {
        try await withLoopbackServer(handler: { _ in .text("hello") }) { server in
            let text = try await client().send(URLRequest(url: server.url("/me"))).catchHTTPErrors().map(\.text).firstValue()
            #expect(text == "hello")
            let received = server.requests
            try #require(received.count == 1)
            #expect(authorizationFields(of: received[0]) == [Self.header])
        }
    }

    /// A 401 ends the request with the 401: no retry with the same credentials, no wait for
    /// credentials from elsewhere.
    @Test func a401EndsTheRequestWithThe401() async throws {
        try await expect401Ends(.text("who are you?", status: 401))
    }

    /// The same with a Basic challenge, which URLSession raises through its authentication
    /// delegate: the transport delivers the 401 as the response and offers no credential.
    @Test func a401WithABasicChallengeEndsTheRequestWithThe401() async throws {
        try await expect401Ends(.text("who are you?", status: 401, headers: ["WWW-Authenticate": #"Basic realm="loopback", charset="UTF-8""#]))
    }

    private func expect401Ends(_ answer: LoopbackResponse) async throws {
        try await withLoopbackServer(handler: { _ in answer }) { server in
            let recorder = TransportRecorder()
            let token = recorder.subscribe(to: try client().send(URLRequest(url: server.url("/me"))))
            let ended = await recorder.waitForCompletion(timeout: .seconds(30))
            token.cancel()
            try #require(ended, "the request did not end")
            let statuses = recorder.events.compactMap { event -> Int? in if case .value(let response) = event { response.statusCode } else { nil } }
            #expect(statuses == [401])
            #expect(recorder.events.last.map { if case .finished = $0 { true } else { false } } == true)
            #expect(server.requests.count == 1, "the request was sent again")
            #expect(server.requests.map(authorizationFields) == [[Self.header]])
        }
    }

    /// The second server is another origin (another port): the redirect to it drops the header.
    @Test func aRedirectToAnotherOriginArrivesWithoutTheHeader() async throws {
        try await withLoopbackServer(handler: { _ in .text("elsewhere") }) { other in
            let location = other.url("/landing").absoluteString
            try await withLoopbackServer(handler: { _ in .status(302, headers: ["Location": location]) }) { server in
                let text = try await client().send(URLRequest(url: server.url("/me"))).catchHTTPErrors().map(\.text).firstValue()
                #expect(text == "elsewhere")
                #expect(server.requests.map(authorizationFields) == [[Self.header]])
                #expect(other.requests.map(authorizationFields) == [[]])
            }
        }
    }
}
