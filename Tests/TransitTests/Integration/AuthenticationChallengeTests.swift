import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A 401 or 407 carrying a challenge, on `URLSessionTransport`: delivered as a response at once,
/// so the client's own handling (``catchHTTPErrors()``, an authoriser's renewal) sees it, and
/// never answered by Foundation with a credential of its own. The transport-independent part is
/// the conformance suite's "challenge delivered" and "challenge through the client".
@Suite("URLSessionTransport: authentication challenges")
struct AuthenticationChallengeTests {
    private static let basic = ["WWW-Authenticate": #"Basic realm="tests""#]

    @Test func catchHTTPErrorsSeesAChallenged401AsAnHTTPClientError() async throws {
        let client = HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests()))
        try await withLoopbackServer(handler: { _ in .status(401, headers: Self.basic, body: Data("sign in".utf8)) }) { server in
            let start = ContinuousClock.now
            do {
                let response = try await client.send(URLRequest(url: server.url("/private"))).catchHTTPErrors().firstValue()
                Issue.record("expected HTTPClientError, got \(response.statusCode)")
            } catch let error as HTTPClientError {
                #expect(error.statusCode == 401)
                #expect(error.response?.text == "sign in")
                #expect(error.response?.value(forHTTPHeaderField: "www-authenticate") == #"Basic realm="tests""#)
            }
            // A request left waiting on the challenge ends only at the client's deadline (300 s; the
            // session's idle timeout is 600 s). The bound stays far below that and far above what
            // other tests of the same run can hold the cooperative threads for (tens of seconds
            // under the thread sanitizer on two cores).
            #expect(ContinuousClock.now - start < .seconds(120))
        }
    }

    @Test func anAuthorizerRenewsOnAChallenged401AndSendsAgain() async throws {
        let refreshes = Locked(0)
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)) { _ in
            refreshes.withLock { $0 += 1 }
            return Signal(value: AuthToken(accessToken: "new"))
        }
        let client = HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests())) { $0.authorizer = store }
        try await withLoopbackServer(handler: { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new"
                ? .text("welcome")
                : .status(401, headers: ["WWW-Authenticate": #"Bearer realm="api", error="invalid_token""#])
        }) { server in
            let response = try await client.send(URLRequest(url: server.url("/me"))).firstValue()
            #expect(response.statusCode == 200)
            #expect(response.text == "welcome")
            #expect(refreshes.withLock { $0 } == 1)
            #expect(server.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer old", "Bearer new"])
        }
    }

    @Test func aCredentialInTheSessionsStoreIsNeverSent() async throws {
        try await withLoopbackServer(handler: { _ in .status(401, headers: Self.basic, body: Data("no".utf8)) }) { server in
            let configuration = URLSessionConfiguration.loopbackTests()
            let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: "tests", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            let storage = configuration.urlCredentialStorage ?? URLCredentialStorage.shared
            storage.setDefaultCredential(URLCredential(user: "stored", password: "secret", persistence: .forSession), for: space)
            configuration.urlCredentialStorage = storage
            defer { storage.remove(URLCredential(user: "stored", password: "secret", persistence: .forSession), for: space) }
            let recorder = try await sendAndWait(URLSessionTransport(configuration: configuration), URLRequest(url: server.url("/private")), timeout: .seconds(10))
            #expect(recorder.responses.first?.statusCode == 401)
            #expect(server.requests.count == 1)
            #expect(server.requests.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == nil })
        }
    }

    @Test func aDownloadTaskOfAChallenged401FailsWithItsHTTPError() async throws {
        let client = HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests(), downloadTasks: true))
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("private")
        try await withLoopbackServer(handler: { _ in .status(401, headers: Self.basic, body: Data("sign in".utf8)) }) { server in
            let probe = AwaitedProbe(client.download(URLRequest(url: server.url("/private")), to: file))
            try #require(await probe.ended.wait(timeout: .seconds(10)), "the download of a 401 did not end")
            let error = try #require(probe.failure as? HTTPClientError, "expected HTTPClientError, got \(String(describing: probe.failure))")
            #expect(error.statusCode == 401)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }
}
