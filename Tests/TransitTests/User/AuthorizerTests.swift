import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("Authorizer attached to a client")
struct AuthorizerTests {
    let scheduler = TestScheduler()

    @Test func theScopeNamesHostsAndRequiresHTTPSUnlessLoopbackIsAllowed() {
        let scope = CredentialScope(hosts: ["api.example.com", "*.cdn.example.com"])
        #expect(scope.allows(URL(string: "https://api.example.com/x")!))
        #expect(scope.allows(URL(string: "https://API.example.com:8443/x")!))
        #expect(scope.allows(URL(string: "https://eu.cdn.example.com/x")!))
        #expect(!scope.allows(URL(string: "https://cdn.example.com.evil.net/x")!))
        #expect(!scope.allows(URL(string: "https://evilapi.example.com/x")!))
        #expect(!scope.allows(URL(string: "http://api.example.com/x")!))
        let loopback = CredentialScope(hosts: ["127.0.0.1", "api.example.com"], insecureHTTP: .loopbackOnly)
        #expect(loopback.allows(URL(string: "http://127.0.0.1:8080/x")!))
        #expect(!loopback.allows(URL(string: "http://api.example.com/x")!))
    }

    /// A scope of up to 8 hosts compares a plain URL's bytes with each; a larger one looks the
    /// host up as a string. Both answer alike, whatever the case of the URL, the scheme or
    /// `localhost`.
    @Test func aScopeOfManyHostsAnswersAsOneOfFew() {
        let named: Set<String> = ["api.example.com", "*.cdn.example.com", "LocalHost", "127.0.0.1"]
        let few = CredentialScope(hosts: named, insecureHTTP: .loopbackOnly)
        let many = CredentialScope(hosts: named.union((0..<12).map { "filler\($0).example.org" }), insecureHTTP: .loopbackOnly)
        let urls = [
            "https://api.example.com/x", "HTTPS://API.EXAMPLE.COM:8443/x", "https://eu.cdn.example.com/x", "https://EU.CDN.Example.Com",
            "https://cdn.example.com/x", "https://.cdn.example.com/x", "https://x.cdn.example.com.evil.net/", "https://evilapi.example.com/",
            "http://api.example.com/x", "http://localhost:8080/x", "HTTP://LOCALHOST/x", "http://127.0.0.1:1/", "ftp://api.example.com/",
            "https://user@api.example.com/", "https://api.example.com.", "https://[::1]/", "http://[::1]:80/",
        ]
        for text in urls {
            let url = URL(string: text)!
            #expect(few.allows(url) == many.allows(url), "\(text)")
        }
        for text in ["https://api.example.com/x", "HTTPS://API.EXAMPLE.COM:8443/x", "https://EU.CDN.Example.Com", "HTTP://LOCALHOST/x",
                     "http://127.0.0.1:1/", "https://user@api.example.com/"] {
            #expect(few.allows(URL(string: text)!), "\(text)")
        }
        for text in ["https://cdn.example.com/x", "https://x.cdn.example.com.evil.net/", "http://api.example.com/x", "ftp://api.example.com/",
                     "https://filler3.example.org/"] {
            #expect(!few.allows(URL(string: text)!), "\(text)")
        }
        #expect(many.allows(URL(string: "https://filler3.example.org/")!))
    }

    @Test func loopbackMeansLocalhostOrOne127AddressOrTheIPv6One() {
        for host in ["localhost", "::1", "[::1]", "127.0.0.1", "127.255.255.254", "127.1.2.3"] {
            #expect(CredentialScope.isLoopback(host), "\(host)")
        }
        for host in ["127.0.0", "127.0.0.1.5", "127.0.0.256", "127..0.1", "127.0.0.", "128.0.0.1", "0127.0.0.1",
                     "127.0.0.1.evil.net", "127.0.0.+1", "", "[127.0.0.1", "10.0.0.1", "localhost.evil.net", "::2"] {
            #expect(!CredentialScope.isLoopback(host), "\(host)")
        }
    }

    /// A client whose authorizer is a store refreshed through the same client; with
    /// `refreshSubscribedLater`, the refresh's chain is subscribed on a later turn of the
    /// scheduler, not on the stack that starts the refresh.
    private func setUp(
        refreshAnswer: StubResponse = .json(#"{"accessToken":"new"}"#),
        refreshSubscribedLater: Bool = false
    ) -> (StubTransport, HTTPClient, TokenStore, SharedValue<Int>) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        let refreshes = SharedValue(0)
        let box = Locked<HTTPClient?>(nil)
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.com"])) { _ in
            refreshes.update { $0 += 1 }
            var refresh = URLRequest(url: URL(string: "https://api.example.com/token")!)
            refresh.httpMethod = "POST"
            let chain = box.withLock { $0! }.send(refresh)
                .catchHTTPErrors()
                .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
            return refreshSubscribedLater ? chain.subscribe(on: scheduler) : chain
        }
        transport.stub(.post, path: "/token").thenRespond(refreshAnswer.delayed(by: .seconds(1)))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        box.withLock { $0 = client }
        return (transport, client, store, refreshes)
    }

    @Test func credentialsAreAddedAndA401IsRenewedOnceForConcurrentRequests() {
        let (transport, client, store, refreshes) = setUp()
        let probes = (0..<3).map { _ in RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!))) }
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.values.first?.text == "hello" })
        #expect(refreshes.value == 1)
        #expect(store.current.accessToken == "new")
        let firstTries = transport.requests.filter { $0.url?.path == "/me" }.prefix(3)
        #expect(firstTries.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "Bearer old" })
    }

    @Test func requestsOutsideTheScopeGetNoCredentials() {
        let (transport, client, _, _) = setUp()
        transport.stub(matching: { $0.url?.host == "other.example.org" }).thenRespond(.text("public"))
        _ = RequestProbe(client.send(URLRequest(url: URL(string: "https://other.example.org/x")!)))
        _ = RequestProbe(client.send(URLRequest(url: URL(string: "http://api.example.com/me")!)))
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == nil })
    }

    /// With `subscribedLater`, the refresh's chain is subscribed on a later turn of the scheduler
    /// (another stack, as a hop to a queue would be): whether the refresh's own request belongs
    /// to the refresh is carried by its subscription, not by the thread, so its 401 still fails
    /// at once instead of waiting for the refresh it is part of until the refresh's deadline.
    @Test(arguments: [false, true])
    func aRevokedRefreshThroughTheSameClientFailsAtOnce(subscribedLater: Bool) {
        let (_, client, store, refreshes) = setUp(refreshAnswer: .status(401), refreshSubscribedLater: subscribedLater)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance(by: .seconds(1))
        #expect(probe.terminalCount == 1)
        #expect(probe.failure as? TokenStore.RefreshError == .reentrantRefresh)
        #expect(!store.isRefreshing)
        #expect(refreshes.value == 1)
    }

    /// The same on real threads: the refresh's chain is subscribed on a queue of its own, and the
    /// client's clock is the real one. The request still knows it is part of the refresh (a
    /// thread-local would be lost on the queue's thread, and the refresh would wait for itself
    /// until its deadline, 20 s here, and fail with `timedOut`).
    @Test func aRevokedRefreshSubscribedOnAnotherThreadStillFailsAtOnce() async {
        let transport = StubTransport()
        transport.stub(.get, path: "/me").thenRespond(.status(401))
        transport.stub(.post, path: "/token").thenRespond(.status(401))
        let refreshQueue = DispatchQueue(label: "AuthorizerTests.refresh")
        let box = Locked<HTTPClient?>(nil)
        let store = TokenStore(
            token: AuthToken(accessToken: "old"),
            scope: CredentialScope(hosts: ["api.example.com"]),
            limits: TokenStore.RefreshLimits(deadline: .seconds(20))
        ) { _ in
            var refresh = URLRequest(url: URL(string: "https://api.example.com/token")!)
            refresh.httpMethod = "POST"
            return box.withLock { $0! }.send(refresh)
                .catchHTTPErrors()
                .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
                .subscribe(on: refreshQueue)
        }
        let client = HTTPClient(transport: transport) { $0.authorizer = store }
        box.withLock { $0 = client }
        await #expect(throws: TokenStore.RefreshError.reentrantRefresh) {
            try await client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)).firstValue()
        }
        #expect(!store.isRefreshing)
    }

    /// An authorizer of the tests' own: a fixed header, and a renewal the test chooses.
    private struct KeyAuthorizer: Authorizer {
        let renewed: Signal<Void, any Error>
        let refuses: Bool
        let renewals = SharedValue(0)
        var scope: CredentialScope { CredentialScope(hosts: ["api.example.com"]) }

        func authorize(_ request: URLRequest) throws -> URLRequest {
            if refuses { throw URLRequestError.invalidBearerToken }
            return try request.settingValue("k", forHTTPHeaderField: "X-Key")
        }

        func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> {
            renewals.update { $0 += 1 }
            return renewed
        }
    }

    private func client(
        answering answers: [StubResponse],
        authorizer: any Authorizer,
        defaultHeaders: [String: String] = [:],
        log: EventLog = EventLog()
    ) -> (StubTransport, HTTPClient) {
        let transport = StubTransport(scheduler: scheduler)
        let served = SharedValue(0)
        transport.stub(.get, path: "/me").thenRespond { _ in
            answers[served.update { $0 += 1; return min($0, answers.count) } - 1]
        }
        return (transport, HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.authorizer = authorizer
            $0.defaultHeaders = defaultHeaders
        })
    }

    /// The renewal events of a custom authorizer, as `name:renewed` / `name` strings, and the
    /// paths of their requests.
    private func renewalEvents(_ log: EventLog) -> [String] {
        log.events.compactMap { event -> String? in
            let path = event.request?.url?.path ?? "-"
            switch event.kind {
            case .credentialRenewalStarted: return "started \(path)"
            case .credentialRenewalSucceeded: return "ended renewed=true \(path)"
            case .credentialRenewalDeclined: return "ended renewed=false \(path)"
            case .credentialRenewalFailed(let error, _): return "failed \((error as? URLError)?.code.rawValue ?? 0) \(path)"
            case .credentialRenewalJoined, .credentialRenewalRefused, .credentialsAlreadyRenewed: return "other"
            default: return nil
            }
        }
    }

    @Test func aCustomAuthorizersRenewalIsReportedToTheMonitors() {
        let renewedLog = EventLog()
        let renewing = KeyAuthorizer(renewed: Signal(value: ()), refuses: false)
        let (_, renewedClient) = client(answering: [.status(401), .text("hello")], authorizer: renewing, log: renewedLog)
        let renewed = RequestProbe(renewedClient.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(renewed.values.map(\.statusCode) == [200])
        #expect(renewalEvents(renewedLog) == ["started /me", "ended renewed=true /me"])
        // The started event comes after the 401's attempt ended, and before the second attempt.
        let names = renewedLog.names
        let started = names.firstIndex(of: "credentialRenewalStarted") ?? -1
        #expect(names.prefix(started).filter { $0 == "attemptStarted" }.count == 1)
        #expect(names.suffix(from: max(started, 0)).filter { $0 == "attemptStarted" }.count == 1)
        #expect(renewedLog.events(named: "credentialRenewalStarted").first?.description == "credential renewal started: GET https://api.example.com/me")

        let emptyLog = EventLog()
        let (_, emptyClient) = client(answering: [.status(401)], authorizer: KeyAuthorizer(renewed: .empty, refuses: false), log: emptyLog)
        _ = RequestProbe(emptyClient.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(renewalEvents(emptyLog) == ["started /me", "ended renewed=false /me"])

        let failedLog = EventLog()
        let failing = KeyAuthorizer(renewed: Signal(error: URLError(.userAuthenticationRequired)), refuses: false)
        let (_, failedClient) = client(answering: [.status(401)], authorizer: failing, log: failedLog)
        _ = RequestProbe(failedClient.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(renewalEvents(failedLog) == ["started /me", "failed \(URLError.Code.userAuthenticationRequired.rawValue) /me"])
    }

    @Test func aTokenStoresSharedRefreshIsReportedOnceByTheStore() {
        let log = EventLog()
        let transport = StubTransport(scheduler: scheduler)
        let served = SharedValue(0)
        transport.stub(.get, path: "/me").thenRespond { _ in served.update { $0 += 1; return $0 } == 1 ? .status(401) : .text("hi") }
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.com"])) { _ in
            Signal(value: AuthToken(accessToken: "new"))
        }
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(probe.values.map(\.statusCode) == [200])
        // Reported by the store (which shares one refresh between requests, so names none), not
        // a second time around it.
        #expect(renewalEvents(log) == ["started -", "ended renewed=true -"])
        #expect(log.names.filter { $0.hasPrefix("credentialRenewal") } == ["credentialRenewalStarted", "credentialRenewalSucceeded"])
    }

    @Test func aRenewalThatEndsWithoutRenewingDeliversThe401() {
        let authorizer = KeyAuthorizer(renewed: .empty, refuses: false)
        let (transport, client) = client(answering: [.status(401)], authorizer: authorizer)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(probe.isFinished && probe.terminalCount == 1 && probe.violations == 0)
        #expect(transport.requests.count == 1)
        #expect(authorizer.renewals.value == 1)
    }

    @Test func aFailedRenewalFailsTheRequestWithItsError() {
        let authorizer = KeyAuthorizer(renewed: Signal(error: URLError(.userAuthenticationRequired)), refuses: false)
        let (transport, client) = client(answering: [.status(401)], authorizer: authorizer)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect((probe.failure as? URLError)?.code == .userAuthenticationRequired)
        #expect(probe.values.isEmpty && probe.terminalCount == 1)
        #expect(transport.requests.count == 1)
    }

    @Test func aSecond401IsTheAnswerWithoutASecondRenewal() {
        let authorizer = KeyAuthorizer(renewed: Signal(value: ()), refuses: false)
        let (transport, client) = client(answering: [.status(401), .status(401), .text("never")], authorizer: authorizer)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(probe.isFinished && probe.terminalCount == 1)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "X-Key") == "k" })
        #expect(authorizer.renewals.value == 1)
    }

    @Test func anAuthorizerThatCannotAuthorizeFailsTheRequestBeforeItIsSent() {
        let authorizer = KeyAuthorizer(renewed: Signal(value: ()), refuses: true)
        let (transport, client) = client(answering: [.text("never")], authorizer: authorizer)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(probe.failure as? URLRequestError == .invalidBearerToken)
        #expect(transport.requests.isEmpty)
    }

    /// An authorizer whose credentials are one `Authorization` value; its `authorize(_:)` is
    /// counted, so a test can tell that the client did not need it.
    private struct ValueAuthorizer: Authorizer {
        let value: String
        let authorizeCalls = SharedValue(0)
        var scope: CredentialScope { CredentialScope(hosts: ["api.example.com"]) }

        func authorize(_ request: URLRequest) throws -> URLRequest {
            authorizeCalls.update { $0 += 1 }
            return try request.settingValue(value, forHTTPHeaderField: "Authorization")
        }

        func authorizationValue() throws -> String? { value }

        func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> { .empty }
    }

    private func valueClient(_ authorizer: ValueAuthorizer) -> (StubTransport, HTTPClient) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(.text("hello"))
        return (transport, HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = authorizer
        })
    }

    @Test func anAuthorizationValueIsSetWithoutGivingTheRequestToTheAuthorizer() throws {
        let authorizer = ValueAuthorizer(value: "Key abc")
        let (transport, client) = valueClient(authorizer)
        let url = URL(string: "https://api.example.com/me")!
        let fromURLRequest = RequestProbe(client.send(try URLRequest(url: url).settingValue("Key old", forHTTPHeaderField: "authorization")))
        let declared = RequestProbe(client.send(TransportRequest(method: .get, url: url)))
        scheduler.advance()
        #expect(fromURLRequest.values.map(\.statusCode) == [200] && declared.values.map(\.statusCode) == [200])
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Key abc", "Key abc"])
        #expect(authorizer.authorizeCalls.value == 0)
    }

    @Test func anAuthorizationValueThatIsNotAHeaderValueFailsTheRequestBeforeItIsSent() {
        let (transport, client) = valueClient(ValueAuthorizer(value: "Key abc\r\nX-Injected: 1"))
        let url = URL(string: "https://api.example.com/me")!
        let fromURLRequest = RequestProbe(client.send(URLRequest(url: url)))
        let declared = RequestProbe(client.send(TransportRequest(method: .get, url: url)))
        scheduler.advance()
        #expect(fromURLRequest.failure as? URLRequestError == .invalidHeaderValue(name: "Authorization"))
        #expect(declared.failure as? URLRequestError == .invalidHeaderValue(name: "Authorization"))
        #expect(transport.requests.isEmpty)
    }

    /// An authorizer that counts the renewals the client makes of it (``Authorizer/renewal(in:)``).
    private struct CountingRenewalAuthorizer: Authorizer {
        let made = SharedValue(0)
        var scope: CredentialScope { CredentialScope(hosts: ["api.example.com"]) }

        func authorize(_ request: URLRequest) throws -> URLRequest { request }
        func authorizationValue() throws -> String? { "Key abc" }
        func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> { Signal(value: ()) }

        func renewal(in context: CredentialRenewalContext) -> @Sendable (URLRequest) -> Signal<Void, any Error> {
            made.update { $0 += 1 }
            return { rejected in self.renewCredentials(after: rejected, scheduler: context.scheduler) }
        }
    }

    /// A renewal is made when a 401 calls for one, not for every request: the requests answered
    /// at once never pay for it.
    @Test func aRenewalIsMadeOnlyWhenA401CallsForIt() {
        let authorizer = CountingRenewalAuthorizer()
        let (transport, client) = client(answering: [.text("hello"), .text("hello"), .status(401), .text("hello")], authorizer: authorizer)
        let url = URL(string: "https://api.example.com/me")!
        let answered = RequestProbe(client.send(TransportRequest(method: .get, url: url)))
        let again = RequestProbe(client.send(URLRequest(url: url)))
        scheduler.advance()
        #expect(answered.values.map(\.statusCode) == [200] && again.values.map(\.statusCode) == [200])
        #expect(authorizer.made.value == 0)
        let renewed = RequestProbe(client.send(TransportRequest(method: .get, url: url)))
        scheduler.advance()
        #expect(renewed.values.map(\.statusCode) == [200])
        #expect(authorizer.made.value == 1)
        #expect(transport.requests.count == 4)
    }

    /// A request declared on the client gets the authoriser's value, never a default header's nor
    /// its own, and the other default headers it lacks, on every attempt (a renewal's too).
    @Test func aDeclaredRequestGetsTheCredentialsAndTheDefaultsItLacksOnEveryAttempt() {
        let (transport, client) = client(
            answering: [.status(401), .text("hello")], authorizer: CountingRenewalAuthorizer(),
            defaultHeaders: ["Accept": "application/json", "Authorization": "Default x", "X-Own": "default"]
        )
        var request = TransportRequest(method: .get, url: URL(string: "https://api.example.com/me")!)
        request.setValue("mine", forHTTPHeaderField: "X-Own")
        // The request's own credentials are replaced by the authoriser's, not sent beside them.
        request.setValue("Key old", forHTTPHeaderField: "authorization")
        let probe = RequestProbe(client.send(request))
        scheduler.advance()
        #expect(probe.values.map(\.statusCode) == [200])
        let sent = transport.requests
        #expect(sent.count == 2)
        #expect(sent.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Key abc", "Key abc"])
        #expect(sent.map { $0.value(forHTTPHeaderField: "Accept") } == ["application/json", "application/json"])
        #expect(sent.map { $0.value(forHTTPHeaderField: "X-Own") } == ["mine", "mine"])
    }

    @Test func cancellingDuringTheRenewalSendsNothingMore() {
        let renewal = PassthroughSubject<Void, any Error>()
        let authorizer = KeyAuthorizer(renewed: renewal.signal, refuses: false)
        let (transport, client) = client(answering: [.status(401), .text("hello")], authorizer: authorizer)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/me")!)))
        scheduler.advance()
        #expect(authorizer.renewals.value == 1)
        probe.cancel()
        renewal.send(())
        scheduler.advance()
        #expect(transport.requests.count == 1)
        #expect(probe.events.isEmpty)
    }

    // MARK: Streams renew as buffered requests do

    /// The statuses of a stream's heads and the text of its body.
    private func streamed(_ probe: RequestProbe<[HTTPResponsePart], any Error>) -> (statuses: [Int], body: String) {
        var statuses: [Int] = []
        var body = Data()
        for part in probe.values.first ?? [] {
            switch part {
            case .head(let head): statuses.append(head.statusCode)
            case .body(let chunk): body.append(chunk)
            }
        }
        return (statuses, String(decoding: body, as: UTF8.self))
    }

    @Test func aStreamRenewsOnA401AndDeliversOnlyTheAnswerAfterIt() {
        let log = EventLog()
        let authorizer = KeyAuthorizer(renewed: Signal(value: ()), refuses: false)
        let (transport, client) = client(answering: [.status(401, body: Data("expired".utf8)), .text("hello")], authorizer: authorizer, log: log)
        let probe = RequestProbe(client.stream(URLRequest(url: URL(string: "https://api.example.com/me")!)).collect())
        scheduler.advance()
        let (statuses, body) = streamed(probe)
        #expect(statuses == [200])
        #expect(body == "hello")
        #expect(probe.isFinished && probe.terminalCount == 1 && probe.violations == 0)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "X-Key") == "k" })
        #expect(authorizer.renewals.value == 1)
        #expect(renewalEvents(log) == ["started /me", "ended renewed=true /me"])
    }

    @Test func aStreamsSecond401IsItsAnswerWithoutASecondRenewal() {
        let authorizer = KeyAuthorizer(renewed: Signal(value: ()), refuses: false)
        let (transport, client) = client(answering: [.status(401), .status(401), .text("never")], authorizer: authorizer)
        let probe = RequestProbe(client.stream(URLRequest(url: URL(string: "https://api.example.com/me")!)).collect())
        scheduler.advance()
        #expect(streamed(probe).statuses == [401])
        #expect(probe.isFinished && probe.terminalCount == 1)
        #expect(transport.requests.count == 2)
        #expect(authorizer.renewals.value == 1)
    }

    @Test func aStreamRefreshesATokenStoresTokenOnce() {
        let (transport, client, store, refreshes) = setUp()
        let probe = RequestProbe(client.stream(URLRequest(url: URL(string: "https://api.example.com/me")!)).collect())
        scheduler.advance(by: .seconds(1))
        #expect(streamed(probe) == ([200], "hello"))
        #expect(refreshes.value == 1)
        #expect(store.current.accessToken == "new")
        let tries = transport.requests.filter { $0.url?.path == "/me" }.map { $0.value(forHTTPHeaderField: "Authorization") }
        #expect(tries == ["Bearer old", "Bearer new"])
    }
}
