import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Defects: a 401 from an origin a redirect named renewed the user's token (and used up the
/// store's refresh limits), though the token had been stripped before it reached that origin;
/// and a header that ``Redaction`` treats as secret (`X-API-Key`, …) followed a redirect to
/// another origin unless the app listed it too.
@Suite("Credentials and redirects")
struct CredentialRedirectTests {
    let scheduler = TestScheduler()

    private func redirect(_ status: Int = 302, to location: String) -> StubResponse {
        .status(status, headers: ["Location": location])
    }

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    // MARK: One list: every header Redaction treats as secret is stripped across origins

    static let secretHeaders = [
        "Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-Auth-Token", "Api-Key", "X-Amz-Security-Token",
        "X-Client-Secret", "X-Refresh-Token", "X-Session-Token", "X-Password",
    ]

    @Test("a redirect to another origin strips every header Redaction redacts, and the app's own, by default")
    func crossOriginRedirectStripsSecretHeaders() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(redirect(to: "https://cdn.example.net/file"))
        transport.stub(matching: { $0.url?.host == "cdn.example.net" }).thenRespond(.text("file"))
        let client = HTTPClient(transport: transport) {
            $0.sensitiveHeaders = ["X-Tenant"]
            $0.scheduler = scheduler
        }
        var request = get("https://api.example.com/start")
        for name in Self.secretHeaders { request.setValue("secret-\(name)", forHTTPHeaderField: name) }
        request.setValue("t-1", forHTTPHeaderField: "X-Tenant")
        request.setValue("trace-1", forHTTPHeaderField: "X-Trace-Id")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let probe = RequestProbe(client.send(request))
        #expect(probe.values.first?.text == "file")
        let followed = try #require(transport.requests.last)
        #expect(followed.url?.host == "cdn.example.net")
        for name in Self.secretHeaders + ["X-Tenant"] {
            #expect(Redaction.isSensitiveHeader(name) || name == "X-Tenant", "\(name) is not redacted")
            #expect(followed.value(forHTTPHeaderField: name) == nil, "\(name) crossed origins")
        }
        #expect(followed.value(forHTTPHeaderField: "X-Trace-Id") == "trace-1")
        #expect(followed.value(forHTTPHeaderField: "Accept") == "application/json")
    }

    @Test("the monitors are told every secret header a redirect to another origin dropped")
    func monitorsSeeTheDroppedHeaders() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(redirect(to: "https://cdn.example.net/file"))
        transport.stub(matching: { $0.url?.host == "cdn.example.net" }).thenRespond(.text("file"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        var request = get("https://api.example.com/start")
        for name in ["Authorization", "X-API-Key", "X-Auth-Token", "X-Trace-Id"] { request.setValue("v", forHTTPHeaderField: name) }
        _ = RequestProbe(client.send(request))
        let stripped = log.events.compactMap { event -> [String]? in
            if case .redirectFollowed(_, _, let stripped) = event.kind { stripped } else { nil }
        }
        #expect(stripped.map { $0.map { $0.lowercased() } } == [["authorization", "x-api-key", "x-auth-token"]])
    }

    @Test("a redirect within the origin keeps every header")
    func sameOriginRedirectKeepsHeaders() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/start").thenRespond(redirect(to: "/next"))
        transport.stub(.get, path: "/next").thenRespond(.text("next"))
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        var request = get("https://api.example.com/start")
        for name in Self.secretHeaders { request.setValue("secret-\(name)", forHTTPHeaderField: name) }
        _ = RequestProbe(client.send(request))
        let followed = try #require(transport.requests.last)
        #expect(followed.url?.path == "/next")
        for name in Self.secretHeaders {
            #expect(followed.value(forHTTPHeaderField: name) == "secret-\(name)", "\(name)")
        }
    }

    // MARK: A 401 renews only where the token went

    /// A client whose authorizer is a store for api.example.com, with a refresh that counts.
    private func authorizedClient(_ transport: StubTransport, scope: Set<String> = ["api.example.com"]) -> (HTTPClient, TokenStore, SharedValue<Int>) {
        let refreshes = SharedValue(0)
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: scope)) { _ in
            refreshes.update { $0 += 1 }
            return Signal(value: AuthToken(accessToken: "new"))
        }
        return (HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = store
        }, store, refreshes)
    }

    @Test("the authorizer does not renew on a 401 from the origin a redirect led to")
    func foreign401ThroughTheAuthorizer() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(redirect(to: "https://evil.example.net/x"))
        transport.stub(matching: { $0.url?.host == "evil.example.net" }).thenRespond(.status(401))
        let (client, store, refreshes) = authorizedClient(transport)
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(probe.terminalCount == 1)
        #expect(refreshes.value == 0)
        #expect(store.current.accessToken == "old")
        #expect(transport.requests.count == 2, "no replay")
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test("the authorizer does not renew when a redirect leads back to its origin without the token")
    func bouncedBackWithoutTheToken() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(redirect(to: "https://evil.example.net/bounce"))
        transport.stub(matching: { $0.url?.host == "evil.example.net" }).thenRespond(redirect(to: "https://api.example.com/private"))
        transport.stub(.get, path: "/private").thenRespond(.status(401))
        let (client, store, refreshes) = authorizedClient(transport)
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(refreshes.value == 0)
        #expect(store.current.accessToken == "old")
        #expect(transport.requests.count == 3)
    }

    @Test("the authorizer does not renew on a 401 from another host of its scope the token was stripped for")
    func otherHostOfTheScope() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(redirect(to: "https://auth.example.com/x"))
        transport.stub(matching: { $0.url?.host == "auth.example.com" }).thenRespond(.status(401))
        let (client, _, refreshes) = authorizedClient(transport, scope: ["*.example.com"])
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(refreshes.value == 0)
    }

    @Test("foreign 401s do not use up the refresh limits: a real one still renews")
    func foreign401sLeaveTheLimitsAlone() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/away").thenRespond(redirect(to: "https://evil.example.net/x"))
        transport.stub(matching: { $0.url?.host == "evil.example.net" }).thenRespond(.status(401))
        transport.stub(.get, path: "/me").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        let (client, store, refreshes) = authorizedClient(transport)
        for _ in 0..<(store.limits.maxRefreshes + 2) {
            _ = RequestProbe(client.send(get("https://api.example.com/away")))
        }
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        #expect(probe.values.first?.text == "hello")
        #expect(refreshes.value == 1)
    }

    @Test("a 401 after a redirect within the origin, with the token, still renews")
    func sameOrigin401Renews() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(redirect(to: "/me2"))
        transport.stub(.get, path: "/me2").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        let (client, store, refreshes) = authorizedClient(transport)
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        #expect(probe.values.first?.text == "hello")
        #expect(refreshes.value == 1)
        #expect(store.current.accessToken == "new")
    }

    @Test("retryWithFreshToken does not renew on a 401 from the origin a redirect led to")
    func foreign401ThroughTheOperator() {
        let f = AuthFixture()
        f.transport.stub(.get, path: "/away").thenRespond(redirect(to: "https://evil.example.net/x"))
        f.transport.stub(matching: { $0.url?.host == "evil.example.net" }).thenRespond(.status(401))
        f.transport.stub(.get, path: "/bounce").thenRespond(redirect(to: "https://evil.example.net/back"))
        let probes = ["away", "bounce"].map { RequestProbe(f.request($0)) }
        f.scheduler.run()
        for probe in probes {
            #expect(statusCode(of: probe.failure) == 401)
            #expect(probe.terminalCount == 1)
        }
        #expect(f.refreshCount.current == 0)
        #expect(f.store.current.accessToken == "old")
        #expect(f.requests(to: "/token").isEmpty)
    }

    @Test("retryWithFreshToken does not renew when a redirect leads back to the origin without the token")
    func bouncedBackThroughTheOperator() {
        let f = AuthFixture()
        f.transport.stub(.get, path: "/start").thenRespond(redirect(to: "https://evil.example.net/bounce"))
        f.transport.stub(matching: { $0.url?.host == "evil.example.net" }).thenRespond(redirect(to: "https://api.example.test/me"))
        let probe = RequestProbe(f.request("start"))
        f.scheduler.run()
        #expect(statusCode(of: probe.failure) == 401)
        #expect(f.refreshCount.current == 0)
    }

    @Test("retryWithFreshToken does not renew a 401 to a request that carried no token")
    func noTokenNoRenewal() {
        let f = AuthFixture()
        let probe = RequestProbe(f.api.get(endpoint: "me").catchHTTPErrors().retryWithFreshToken(from: f.store))
        f.scheduler.run()
        #expect(statusCode(of: probe.failure) == 401)
        #expect(f.refreshCount.current == 0)
    }
}

@Suite("Redirect policy: an unreadable Location")
struct UnreadableLocationTests {
    /// Found by the `redirect-location` fuzz target (see SeamTests): from a URL without a scheme,
    /// Foundation resolves `./HTTPS://host:p` to a URL whose port is not a number; the policy
    /// refuses it like any unreadable Location.
    @Test func aLocationResolvingToAURLWithAnUnreadablePortIsRefused() throws {
        let current = try #require(URL(string: "\u{01}#fragment"))
        let head = HTTPResponseHead(url: current, statusCode: 302, headerFields: ["Location": "./HTTPS://host.example.com:p"])
        let next = RedirectPolicy.follow.next(after: head, to: TransportRequest(URLRequest(url: current)), hops: 0, sensitiveHeaders: [])
        guard case .failure(let error)? = next else {
            Issue.record("\(String(describing: next))")
            return
        }
        #expect(error == .invalidLocation(status: 302))
    }
}
