import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Records every event a client's monitors receive.
final class EventLog: HTTPEventMonitor {
    private let state = Locked<[HTTPEvent]>([])

    func receive(_ event: HTTPEvent) {
        state.withLock { $0.append(event) }
    }

    var events: [HTTPEvent] { state.withLock { $0 } }
    /// The kinds, by name (`attemptStarted`, `retryScheduled`, …), in order; without the
    /// closing `requestEnded`, which `RequestIdentityTests` checks.
    var names: [String] { events.map { Self.name(of: $0.kind) }.filter { $0 != "requestEnded" } }
    var attempts: [HTTPAttemptMetrics] {
        events.compactMap { if case .attemptEnded(let metrics) = $0.kind { metrics } else { nil } }
    }

    func count(_ name: String) -> Int { names.filter { $0 == name }.count }
    func events(named name: String) -> [HTTPEvent] { events.filter { Self.name(of: $0.kind) == name } }
    func clear() { state.withLock { $0 = [] } }

    static func name(of kind: HTTPEvent.Kind) -> String {
        let text = String(describing: kind)
        return String(text.prefix { $0 != "(" })
    }
}

/// The HTTP/1.1 size of `lines` joined with CRLF, plus the blank line.
private func head(_ lines: String...) -> Int {
    (lines.joined(separator: "\r\n") + "\r\n\r\n").utf8.count
}

@Suite("Lifecycle monitor")
struct LifecycleMonitorTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    // MARK: Attempts: bytes and timings

    @Test func everyAttemptOfARedirectAndARetryReportsItsBytesIncludingHeadersAndItsVirtualTimings() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a")
            .thenRespond(.status(302, headers: ["Location": "/b"], body: Data("moved".utf8)).delayed(by: .milliseconds(10)))
        transport.stub(.get, path: "/b")
            .thenRespond(.text("busy", status: 503).delayed(by: .milliseconds(20)))
            .thenRespond(.chunks([Data("hel".utf8), Data("lo".utf8)], headers: ["Content-Type": "text/plain"], every: .milliseconds(5))
                .delayed(by: .milliseconds(30)))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.userAgent = nil
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        var request = get("https://api.example.test/a")
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none)
        let probe = RequestProbe(client.send(request).catchHTTPErrors().retry(policy, scheduler: scheduler))
        scheduler.advance(by: .seconds(2))
        #expect(probe.values.first?.text == "hello")

        let attempts = log.attempts
        try #require(attempts.count == 4, "\(log.names)")
        #expect(log.events(named: "attemptEnded").map { $0.request?.url?.path } == ["/a", "/b", "/a", "/b"])
        #expect(attempts.map(\.head?.statusCode) == [302, 503, 302, 200])
        #expect(Set(attempts.map(\.id)).count == 4)

        // Sent: the request line, Host, every header, the blank line; no body.
        let sentA = head("GET /a HTTP/1.1", "Host: api.example.test", "Accept: text/plain")
        let sentB = head("GET /b HTTP/1.1", "Host: api.example.test", "Accept: text/plain")
        #expect(attempts.map(\.sentHeadBytes) == [sentA, sentB, sentA, sentB])
        #expect(attempts.allSatisfy { $0.sentBodyBytes == 0 })
        // Received: the status line, every header, the blank line; the body as delivered. The
        // redirect's body is never read.
        let redirect = head("HTTP/1.1 302 Found", "Location: /b")
        let busy = head("HTTP/1.1 503 Service Unavailable")
        let ok = head("HTTP/1.1 200 OK", "Content-Type: text/plain")
        #expect(attempts.map(\.receivedHeadBytes) == [redirect, busy, redirect, ok])
        #expect(attempts.map(\.receivedBodyBytes) == [0, 4, 0, 5])
        #expect(Int64(attempts[3].receivedHeadBytes) + attempts[3].receivedBodyBytes == Int64(ok + 5))
        #expect(Int64(attempts[3].sentHeadBytes) + attempts[3].sentBodyBytes == Int64(sentB))

        // Timings on the client's scheduler: virtual, exact.
        let ms = { (value: Int) in Duration.milliseconds(value) }
        #expect(attempts.map(\.startedAt) == [ms(0), ms(10), ms(1030), ms(1040)])
        #expect(attempts.map(\.headAt) == [ms(10), ms(30), ms(1040), ms(1070)])
        #expect(attempts.map(\.endedAt) == [ms(10), ms(30), ms(1040), ms(1080)])
        #expect(attempts[3].headAt.map { $0 - attempts[3].startedAt } == ms(30))
        #expect(attempts[3].endedAt - attempts[3].startedAt == ms(40))

        let outcomes = attempts.map { metrics -> String in
            switch metrics.outcome {
            case .completed: "completed"
            case .redirected: "redirected"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }
        #expect(outcomes == ["redirected", "completed", "redirected", "completed"])
    }

    @Test func eventsComeInTheOrderOfTheLifecycle() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(.status(302, headers: ["Location": "/b"]))
        transport.stub(.get, path: "/b").thenRespond(.status(503)).thenRespond(.text("ok"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none)
        let probe = RequestProbe(client.send(get("https://api.example.test/a")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(probe.isFinished)
        let once = ["requestStarted", "attemptStarted", "attemptEnded", "redirectFollowed", "attemptStarted", "attemptEnded", "responseReceived"]
        #expect(log.names == once + ["retryScheduled"] + once)
        // Every event is stamped on the client's clock.
        #expect(log.events.first?.time == .zero)
        #expect(log.events.last?.time == .seconds(1))
        // Attempts carry the request exactly as handed to the transport.
        let started = log.events(named: "attemptStarted").compactMap { $0.request?.url?.path }
        #expect(started == ["/a", "/b", "/a", "/b"])
    }

    @Test func aTransportFailureEndsItsAttemptAsFailedAndACancelledRequestAsCancelled() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/down").thenRespond(.failure(URLError(.timedOut)))
        transport.stub(.get, path: "/slow").thenRespond(.chunks([Data("a".utf8), Data("b".utf8)], every: .seconds(1)))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        let down = RequestProbe(client.send(get("https://api.example.test/down")))
        #expect((down.failure as? TransportError)?.code == .timedOut)
        let slow = RequestProbe(client.stream(get("https://api.example.test/slow")))
        scheduler.advance(by: .seconds(1))
        slow.cancel()
        let attempts = log.attempts
        #expect(attempts.count == 2)
        if case .failed(let error) = attempts.first?.outcome {
            #expect((error as? TransportError)?.code == .timedOut)
        } else {
            Issue.record("expected a failed attempt: \(String(describing: attempts.first?.outcome))")
        }
        #expect(attempts.first?.headAt == nil)
        #expect(attempts.first.map { Int64($0.receivedHeadBytes) + $0.receivedBodyBytes } == 0)
        guard case .cancelled = attempts.last?.outcome else {
            Issue.record("expected a cancelled attempt: \(String(describing: attempts.last?.outcome))")
            return
        }
        #expect(attempts.last?.receivedBodyBytes == 1)
        #expect(attempts.last?.endedAt == .seconds(1))
        #expect(log.count("requestFailed") == 1)
        // Exactly one end per start, cancelled ones included.
        #expect(log.count("attemptStarted") == log.count("attemptEnded"))
    }

    @Test func aBodyIsCountedWithItsContentLengthLineAndABodyFileBySize() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.post).thenRespond(.status(204))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.userAgent = nil
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        var request = get("https://api.example.test:8443/upload?kind=a%20b")
        request.httpMethod = "POST"
        request.httpBody = Data(count: 1234)
        _ = RequestProbe(client.send(request))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("monitor-\(UUID().uuidString)")
        try Data(count: 5000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var upload = get("https://api.example.test/upload")
        upload.httpMethod = "POST"
        _ = RequestProbe(client.send(upload, bodyFile: file))
        let attempts = log.attempts
        try #require(attempts.count == 2)
        #expect(attempts[0].sentHeadBytes == head("POST /upload?kind=a%20b HTTP/1.1", "Host: api.example.test:8443", "Content-Length: 1234"))
        #expect(attempts[0].sentBodyBytes == 1234)
        #expect(attempts[1].sentHeadBytes == head("POST /upload HTTP/1.1", "Host: api.example.test", "Content-Length: 5000"))
        #expect(attempts[1].sentBodyBytes == 5000)
    }

    // MARK: Redirects

    @Test func aRedirectToAnotherOriginReportsTheCredentialsItDropped() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/same").thenRespond(.status(307, headers: ["Location": "/moved"]))
        transport.stub(.get, path: "/away").thenRespond(.status(302, headers: ["Location": "https://cdn.example.test/file"]))
        transport.stub(.get).thenRespond(.text("ok"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.sensitiveHeaders = ["X-API-Key"]
            $0.scheduler = scheduler
        }
        var request = get("https://api.example.test/same")
        request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        request.setValue("k-123", forHTTPHeaderField: "X-API-Key")
        request.setValue("en", forHTTPHeaderField: "Accept-Language")
        _ = RequestProbe(client.send(request))
        request.url = URL(string: "https://api.example.test/away")
        _ = RequestProbe(client.send(request))
        let redirects = log.events(named: "redirectFollowed")
        try #require(redirects.count == 2)
        guard case .redirectFollowed(let status, let next, let stripped) = redirects[0].kind,
              case .redirectFollowed(let awayStatus, let awayNext, let awayStripped) = redirects[1].kind
        else { return }
        #expect(status == 307 && next.url?.path == "/moved" && stripped.isEmpty)
        #expect(awayStatus == 302 && awayNext.url?.host == "cdn.example.test")
        #expect(awayStripped.map { $0.lowercased() } == ["authorization", "x-api-key"])
        #expect(redirects[1].request?.url?.path == "/away")
        // The description names the headers, never their values.
        #expect(redirects[1].description.contains("Authorization"))
        #expect(!redirects[1].description.contains("secret-token"))
        #expect(!redirects[1].description.contains("k-123"))
    }

    // MARK: Waits

    @Test func aRateLimitWaitIsReportedWithItsKeyAndLengthOnlyWhenThereIsOne() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("ok"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.rateLimiter = RateLimiter(requestsPerSecond: 2)
        }
        let probes = (0..<3).map { _ in RequestProbe(client.send(get("https://api.example.test/v1/a"))) }
        #expect(log.count("rateLimitWaited") == 0)
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.isFinished })
        let waits = log.events(named: "rateLimitWaited")
        try #require(waits.count == 2)
        let reported = waits.compactMap { event -> (String, Duration)? in
            if case .rateLimitWaited(let key, let waited) = event.kind { (key, waited) } else { nil }
        }
        #expect(reported.map(\.0) == ["https://api.example.test:443/v1", "https://api.example.test:443/v1"])
        #expect(reported.map(\.1) == [.milliseconds(500), .seconds(1)])
        #expect(waits.map(\.time) == [.milliseconds(500), .seconds(1)])
        // The wait comes before the attempt it held back.
        let names = log.names
        #expect(names.firstIndex(of: "rateLimitWaited")! < names.lastIndex(of: "attemptStarted")!)
    }

    @Test func aCooldownIsReportedWhenItStartsWhenARequestWaitsAndWhenOneIsRefused() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/v1/a").thenRespond(.status(429, headers: ["Retry-After": "2"]))
            .thenRespond(.status(503, headers: ["Retry-After": "60"])).thenRespond(.text("a"))
        transport.stub(.get).thenRespond(.text("ok"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns(maxWait: .seconds(10))
        }
        _ = RequestProbe(client.send(get("https://api.example.test/v1/a")))
        #expect(log.count("cooldownStarted") == 1)
        let waiting = (0..<2).map { _ in RequestProbe(client.send(get("https://api.example.test/v1/b"))) }
        let other = RequestProbe(client.send(get("https://api.example.test/v2/c")))
        #expect(other.isFinished)
        #expect(log.count("cooldownWait") == 2)
        guard case .cooldownWait(let key, let duration) = log.events(named: "cooldownWait")[0].kind else { return }
        #expect(key == "https://api.example.test:443/v1" && duration == .seconds(2))
        scheduler.advance(by: .seconds(2))
        #expect(waiting.allSatisfy { $0.isFinished })
        // The 200s started nothing; a 503 asking for 60 s starts a cooldown longer than the
        // client waits, which refuses new requests at once.
        _ = RequestProbe(client.send(get("https://api.example.test/v1/a")))
        #expect(log.count("cooldownStarted") == 2)
        guard case .cooldownStarted(_, let long, let status) = log.events(named: "cooldownStarted")[1].kind else { return }
        #expect(long == .seconds(60) && status == 503)
        let refused = RequestProbe(client.send(get("https://api.example.test/v1/b")))
        #expect(refused.failure is HTTPServerError)
        #expect(log.count("cooldownRefused") == 1)
        #expect(log.count("cooldownWait") == 2)
    }

    // MARK: Retries

    @Test func aRetryIsReportedWithItsReasonDelayAndAttemptAndABudgetRefusalOnce() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(503))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        // One retry per 10 s window, whatever the traffic.
        let budget = RetryBudget(ratio: 0, minRetriesPerSecond: 0.1, window: .seconds(10))
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(500), jitter: .none, budget: budget)
        let first = RequestProbe(client.send(get("https://api.example.test/a")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        let second = RequestProbe(client.send(get("https://api.example.test/b")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(first.failure is HTTPServerError)
        #expect(second.failure is RetryBudgetExhausted)
        let scheduled = log.events(named: "retryScheduled")
        let refused = log.events(named: "retryRefusedByBudget")
        try #require(scheduled.count == 1 && refused.count == 1)
        guard case .retryScheduled(let attempt, let delay, let failure) = scheduled[0].kind,
              case .retryRefusedByBudget(let refusedAttempt, let refusedFailure) = refused[0].kind
        else { return }
        #expect(attempt == 1 && delay == .milliseconds(500))
        #expect((failure as? any HTTPError)?.statusCode == 503)
        #expect(scheduled[0].request?.url?.path == "/a")
        #expect(refusedAttempt == 1 && (refusedFailure as? any HTTPError)?.statusCode == 503)
        #expect(refused[0].request?.url?.path == "/b")
        // The second attempt of /a failed too, with no attempts left: nothing more is reported.
        #expect(log.count("attemptStarted") == 3)
    }

    @Test func aTransportFailureRetryAndRespondToRateLimitingAreReportedToo() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/flaky").thenRespond(.failure(URLError(.networkConnectionLost))).thenRespond(.text("ok"))
        transport.stub(.get, path: "/limited").thenRespond(.status(429, headers: ["Retry-After": "3"])).thenRespond(.text("ok"))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        let flaky = RequestProbe(client.send(get("https://api.example.test/flaky"))
            .retry(RetryPolicy(maxAttempts: 2, baseDelay: .seconds(2), jitter: .none), scheduler: scheduler))
        let limited = RequestProbe(client.send(get("https://api.example.test/limited"))
            .catchHTTPErrors().respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler))
        scheduler.advance(by: .seconds(3))
        #expect(flaky.isFinished && limited.isFinished)
        let retries = log.events(named: "retryScheduled").compactMap { event -> (String?, Duration, Bool)? in
            guard case .retryScheduled(_, let delay, let failure) = event.kind else { return nil }
            return (event.request?.url?.path, delay, failure is TransportError)
        }
        try #require(retries.count == 2)
        #expect(retries[0] == ("/flaky", .seconds(2), true))
        #expect(retries[1] == ("/limited", .seconds(3), false))
    }

    @Test func aChainWithoutAClientRetriesUnreported() {
        // A bare transport's failures carry no client: retried the same, reported nowhere.
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.failure(URLError(.timedOut))).thenRespond(.text("ok"))
        let probe = RequestProbe(transport.send(get("https://api.example.test/x"))
            .retry(RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none), method: .get, scheduler: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(probe.values.first?.text == "ok")
    }

    // MARK: Failover

    @Test func failoverAndRecoveryAreReportedOnce() throws {
        let transport = StubTransport(scheduler: scheduler)
        let primaryDown = SharedValue(true)
        transport.stub(matching: { $0.url?.host == "a.example.test" }).thenRespond { _ in
            primaryDown.value ? .failure(URLError(.cannotConnectToHost)) : .text("from a")
        }
        transport.stub(matching: { $0.url?.host == "b.example.test" }).thenRespond(.text("from b"))
        let failover = HostFailover(origins: ["https://a.example.test", "https://b.example.test"], quarantine: .seconds(30))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.failover = failover
        }
        let first = RequestProbe(client.send(get("https://a.example.test/x")))
        #expect(first.values.first?.text == "from b")
        #expect(log.names.filter { ["hostQuarantined", "failover", "hostRecovered"].contains($0) } == ["hostQuarantined", "failover"])
        guard case .failover(let from, let to, let error) = log.events(named: "failover")[0].kind,
              case .hostQuarantined(let origin, let duration, _) = log.events(named: "hostQuarantined")[0].kind
        else { return }
        #expect(from == "https://a.example.test:443" && to == "https://b.example.test:443" && error.code == .cannotConnectToHost)
        #expect(origin == from && duration == .seconds(30))
        // Two attempts: the failed one on a, the one on b.
        #expect(log.events(named: "attemptEnded").map { $0.request?.url?.host } == ["a.example.test", "b.example.test"])

        _ = RequestProbe(client.send(get("https://a.example.test/x")))
        #expect(log.count("hostRecovered") == 0)
        primaryDown.value = false
        scheduler.advance(by: .seconds(30))
        let back = RequestProbe(client.send(get("https://a.example.test/x")))
        #expect(back.values.first?.text == "from a")
        _ = RequestProbe(client.send(get("https://a.example.test/x")))
        let recovered = log.events(named: "hostRecovered")
        try #require(recovered.count == 1)
        guard case .hostRecovered(let healthy) = recovered[0].kind else { return }
        #expect(healthy == "https://a.example.test:443")
        #expect(log.count("failover") == 1)
    }

    // MARK: Token refresh

    private func authorizedClient(
        log: EventLog,
        refreshAnswer: StubResponse = .json(#"{"accessToken":"new"}"#),
        limits: TokenStore.RefreshLimits? = nil
    ) -> (StubTransport, HTTPClient, TokenStore) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        transport.stub(.post, path: "/token").thenRespond(refreshAnswer.delayed(by: .seconds(1)))
        let box = Locked<HTTPClient?>(nil)
        let store = TokenStore(
            token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.test"]),
            limits: limits ?? TokenStore.RefreshLimits()
        ) { _ in
            var refresh = URLRequest(url: URL(string: "https://api.example.test/token")!)
            refresh.httpMethod = "POST"
            return box.withLock { $0! }.send(refresh)
                .catchHTTPErrors()
                .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
        }
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        box.withLock { $0 = client }
        return (transport, client, store)
    }

    private var tokenEvents: Set<String> {
        ["credentialRenewalStarted", "credentialRenewalJoined", "credentialRenewalSucceeded", "credentialRenewalFailed", "credentialRenewalRefused"]
    }

    @Test func oneSharedRefreshIsReportedOnceWithItsJoiners() throws {
        let log = EventLog()
        let (_, client, _) = authorizedClient(log: log)
        let probes = (0..<3).map { _ in RequestProbe(client.send(get("https://api.example.test/me"))) }
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.values.first?.text == "hello" })
        #expect(log.names.filter(tokenEvents.contains) == [
            "credentialRenewalStarted", "credentialRenewalJoined", "credentialRenewalJoined", "credentialRenewalSucceeded",
        ])
        guard case .credentialRenewalSucceeded(let sharedBy) = log.events(named: "credentialRenewalSucceeded")[0].kind else { return }
        #expect(sharedBy == 3)
        #expect(log.events(named: "credentialRenewalSucceeded")[0].time == .seconds(1))
        // The token never appears in a description.
        #expect(log.events.allSatisfy { !$0.description.contains("Bearer new") && !$0.description.contains("Bearer old") })
    }

    @Test func aReentrantRefreshIsReportedAsRefusedAndDoesNotHang() throws {
        let log = EventLog()
        let (_, client, store) = authorizedClient(log: log, refreshAnswer: .status(401))
        let probe = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? TokenStore.RefreshError == .reentrantRefresh)
        #expect(!store.isRefreshing)
        #expect(log.names.filter(tokenEvents.contains) == ["credentialRenewalStarted", "credentialRenewalRefused"])
        guard case .credentialRenewalRefused(let reason, _) = log.events(named: "credentialRenewalRefused")[0].kind else { return }
        #expect(reason as? TokenStore.RefreshError == .reentrantRefresh)
    }

    @Test func aRefreshOverTheLimitIsRefusedWithoutStartingAndAFailedOneIsReportedAsFailed() throws {
        let log = EventLog()
        let limits = TokenStore.RefreshLimits(maxRefreshes: 1, window: .seconds(60))
        let (_, client, _) = authorizedClient(log: log, refreshAnswer: .status(500), limits: limits)
        let first = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance(by: .seconds(1))
        #expect(first.failure is HTTPServerError)
        let second = RequestProbe(client.send(get("https://api.example.test/me")))
        #expect(second.failure as? TokenStore.RefreshError == .tooManyRefreshes)
        #expect(log.names.filter(tokenEvents.contains) == ["credentialRenewalStarted", "credentialRenewalFailed", "credentialRenewalRefused"])
        guard case .credentialRenewalFailed(let error, let sharedBy) = log.events(named: "credentialRenewalFailed")[0].kind,
              case .credentialRenewalRefused(let reason, _) = log.events(named: "credentialRenewalRefused")[0].kind
        else { return }
        #expect((error as? any HTTPError)?.statusCode == 500 && sharedBy == 1)
        #expect(reason as? TokenStore.RefreshError == .tooManyRefreshes)
    }

    @Test func retryWithFreshTokenReportsToTheClientThatAnswered401() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in
            Signal(value: AuthToken(accessToken: "new")).delay(for: .seconds(1), scheduler: scheduler).setFailureType()
        }
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        let probes = (0..<2).map { _ in
            RequestProbe(Signal(tryDeferred: { client.send(try store.authorize(get("https://api.example.test/me"))) })
                .catchHTTPErrors()
                .retryWithFreshToken(from: store))
        }
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.values.first?.text == "hello" })
        #expect(log.names.filter(tokenEvents.contains) == ["credentialRenewalStarted", "credentialRenewalJoined", "credentialRenewalSucceeded"])
    }

    // MARK: Coalescing

    @Test func joiningACoalescedRequestIsReportedAndOnlyOneAttemptIsMade() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("shared").delayed(by: .seconds(1)))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.deadline = .unlimited
            $0.scheduler = scheduler
            $0.coalescesRequests = true
        }
        let probes = (0..<3).map { _ in RequestProbe(client.send(get("https://api.example.test/feed"))) }
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.values.first?.text == "shared" })
        let joins = log.events(named: "coalescedRequestJoined").compactMap { event -> Int? in
            if case .coalescedRequestJoined(let subscribers) = event.kind { subscribers } else { nil }
        }
        #expect(joins == [2, 3])
        #expect(log.count("attemptStarted") == 1)
        #expect(log.count("requestStarted") == 3)
        #expect(log.count("responseReceived") == 3)
    }

    // MARK: Request-level kinds, quiet clients, descriptions

    @Test func aMonitorOfTheRequestLevelKindsHearsAboutEveryRequestOnce() {
        final class RequestMonitor: HTTPEventMonitor {
            let log = Locked<[String]>([])
            func receive(_ event: HTTPEvent) {
                switch event.kind {
                case .requestStarted: log.withLock { $0.append("send \(event.request!.url!.path)") }
                case .responseReceived(let response): log.withLock { $0.append("receive \(response.statusCode)") }
                case .requestFailed: log.withLock { $0.append("fail") }
                default: break
                }
            }
        }
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(.status(302, headers: ["Location": "/b"]))
        transport.stub(.get, path: "/b").thenRespond(.status(200))
        transport.stub(.get, path: "/c").thenRespond(.failure(URLError(.timedOut)))
        let monitor = RequestMonitor()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        _ = RequestProbe(client.send(get("https://api.example.test/a")))
        _ = RequestProbe(client.send(get("https://api.example.test/c")))
        #expect(monitor.log.withLock { $0 } == ["send /a", "receive 200", "send /c", "fail"])
    }

    @Test func descriptionsNeverShowCredentials() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.failure(URLError(.timedOut)))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
        }
        // User-info (`alice:pa55word@`) is refused before anything is sent: RequestFieldValidationTests.
        var request = get("https://api.example.test/x?access_token=qwerty&page=2")
        request.setValue("Bearer s3cr3t", forHTTPHeaderField: "Authorization")
        request.setValue("session=c00kie", forHTTPHeaderField: "Cookie")
        _ = RequestProbe(client.send(request).retry(RetryPolicy(maxAttempts: 2, baseDelay: .seconds(0), jitter: .none), scheduler: scheduler))
        scheduler.run()
        #expect(log.events.count >= 8)
        for event in log.events {
            let text = event.description
            for secret in ["pa55word", "qwerty", "s3cr3t", "c00kie"] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect(log.events.contains { $0.description.contains("page=2") && $0.description.contains("access_token=REDACTED") })
    }

    @Test func aClientWithoutMonitorsReportsNothingAndBehavesTheSame() {
        // The same chain, with and without monitors: same requests, same result.
        for monitored in [false, true] {
            let transport = StubTransport(scheduler: scheduler)
            transport.stub(.get).thenRespond(.status(503)).thenRespond(.text("ok"))
            let log = EventLog()
            let client = HTTPClient(transport: transport) {
                $0.monitors = monitored ? [log] : []
                $0.scheduler = scheduler
            }
            let probe = RequestProbe(client.send(get("https://api.example.test/x")).catchHTTPErrors()
                .retry(RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none), scheduler: scheduler))
            scheduler.advance(by: .seconds(1))
            #expect(probe.values.first?.text == "ok")
            #expect(transport.requests.count == 2)
            #expect(log.events.isEmpty == !monitored)
            #expect(client.configuration.monitors.isEmpty == !monitored)
        }
    }

    // MARK: Threads

    @Test func concurrentRequestsOnRealQueuesReportEveryAttemptExactlyOnce() async throws {
        let queue = DispatchQueue(label: "monitor-test", attributes: .concurrent)
        let transport = StubTransport(scheduler: queue)
        transport.stub(.get, path: "/redirect").thenRespond(.status(302, headers: ["Location": "/ok"]).delayed(by: .milliseconds(1)))
        let flaky = SharedValue(0)
        transport.stub(.get, path: "/ok").thenRespond { _ in
            flaky.update { count -> StubResponse in
                count += 1
                return count % 3 == 0 ? .status(503) : .chunks([Data("a".utf8), Data("b".utf8)], every: .milliseconds(1))
            }
        }
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = queue
            $0.rateLimiter = RateLimiter(requestsPerSecond: 10_000, burst: 100)
            $0.cooldowns = Cooldowns()
            $0.coalescesRequests = true
        }
        // Every third answer of /ok is a 503, whichever request draws it: with concurrent requests
        // one request can draw several in a row (five in a row is 1 in 243), so the policy allows
        // far more attempts than any run needs; the test is about reporting, not giving up.
        let policy = RetryPolicy(maxAttempts: 60, baseDelay: .milliseconds(1), maxDelay: .milliseconds(2), jitter: .full)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let path = index % 2 == 0 ? "/redirect" : "/ok"
                    let request = URLRequest(url: URL(string: "https://api.example.test\(path)?n=\(index % 10)")!)
                    _ = try await client.send(request).catchHTTPErrors().retry(policy, scheduler: queue).firstValue()
                }
            }
            try await group.waitForAll()
        }
        let started = Set(log.events(named: "attemptStarted").compactMap { if case .attemptStarted(let id) = $0.kind { id } else { nil } })
        let ended = log.attempts.map(\.id)
        #expect(started.count == log.count("attemptStarted"))
        #expect(ended.count == Set(ended).count, "an attempt ended twice")
        #expect(Set(ended) == started)
    }
}
