import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// The chain operators given no scheduler time their waits on the clock of the client that sent
/// the request, learnt from the subscription, with monitors or without.
@Suite("Chain operators on the client's clock")
struct OperatorClockTests {
    private static let url = URL(string: "https://api.example.test/items")!

    /// A client timed by `scheduler`, over a transport whose `GET /items` answers `answers` in order.
    private static func client(
        _ scheduler: TestScheduler,
        monitored: Bool,
        answers: [StubResponse]
    ) -> (HTTPClient, StubTransport, EventLog) {
        let transport = StubTransport(scheduler: scheduler)
        let stub = transport.stub(.get, path: "/items")
        for answer in answers { stub.thenRespond(answer) }
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            if monitored { $0.monitors = [log] }
        }
        return (client, transport, log)
    }

    @Test(arguments: [false, true])
    func respondToRateLimitingWaitsOnTheClientsClock(monitored: Bool) {
        let scheduler = TestScheduler()
        let (client, transport, log) = Self.client(
            scheduler, monitored: monitored, answers: [.status(429, headers: ["Retry-After": "5"]), .text("ok")]
        )
        let probe = RequestProbe(client.send(URLRequest(url: Self.url)).catchHTTPErrors().respondToRateLimiting(maxWait: .seconds(30)))
        scheduler.advance(by: .seconds(5) - .nanoseconds(1))
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .nanoseconds(1))
        #expect(transport.requests.count == 2)
        #expect(probe.values.map(\.text) == ["ok"])
        #expect(probe.isFinished)
        if monitored {
            // One request to the monitors, its retry stamped on the client's clock.
            #expect(log.count("requestStarted") == 2)
            #expect(Set(log.events.compactMap(\.requestID)).count == 1)
            #expect(log.events(named: "retryScheduled").first?.time == .zero)
            #expect(log.events.filter { if case .requestEnded = $0.kind { true } else { false } }.count == 1)
        }
    }

    @Test(arguments: [false, true])
    func retryBacksOffOnTheClientsClock(monitored: Bool) {
        let scheduler = TestScheduler()
        let (client, transport, log) = Self.client(scheduler, monitored: monitored, answers: [.status(503), .text("ok")])
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(2), jitter: .none)
        let probe = RequestProbe(client.send(URLRequest(url: Self.url)).catchHTTPErrors().retry(policy))
        scheduler.advance(by: .seconds(2) - .nanoseconds(1))
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .nanoseconds(1))
        #expect(transport.requests.count == 2)
        #expect(probe.values.map(\.text) == ["ok"])
        if monitored {
            #expect(log.count("retryScheduled") == 1)
            #expect(Set(log.events.compactMap(\.requestID)).count == 1)
        }
    }

    @Test func aRefreshStartedByRetryWithFreshTokenIsTimedByTheClientsClock() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("ok") : .status(401)
        }
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        // A refresh that never answers: only its deadline, on the client's clock, ends it.
        let store = TokenStore(
            token: AuthToken(accessToken: "old"),
            limits: TokenStore.RefreshLimits(deadline: .seconds(10))
        ) { _ in Signal<AuthToken, any Error>.never }
        let request = Signal(tryDeferred: { client.send(try store.authorize(URLRequest(url: Self.url))) })
        let probe = RequestProbe(request.catchHTTPErrors().retryWithFreshToken(from: store))
        scheduler.advance(by: .seconds(10) - .nanoseconds(1))
        #expect(probe.terminalCount == 0)
        scheduler.advance(by: .nanoseconds(1))
        #expect(probe.failure as? TokenStore.RefreshError == .timedOut)
    }
}

/// What the operators' request context keeps once a chain has ended.
@Suite("The request context after the chain")
struct RequestContextReleaseTests {
    /// A monitor whose per-request context is an object the test watches.
    private final class ContextMonitor: HTTPEventMonitor {
        final class RequestContextObject: Sendable {}
        let last = Locked<Weak?>(nil)
        struct Weak: Sendable {
            weak var object: RequestContextObject?
        }

        func captureRequestContext() -> (any Sendable)? {
            let object = RequestContextObject()
            last.withLock { $0 = Weak(object: object) }
            return object
        }

        func receive(_ event: HTTPEvent) {}
    }

    /// The subscriber keeps its token after the chain finished: the request (its sink, and
    /// with it the monitors' contexts) is released all the same, whichever operator made the
    /// request context (the Signals contract's
    /// "a finished chain releases every object it created, even while the caller still holds its
    /// token").
    @Test(arguments: [false, true])
    func aFinishedChainKeepsNoRequestWhileItsTokenLives(retried: Bool) throws {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond(.status(429, headers: ["Retry-After": "1"])).thenRespond(.text("ok"))
        let monitor = ContextMonitor()
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.monitors = [monitor]
        }
        let finished = Locked(false)
        let limited = client.send(URLRequest(url: URL(string: "https://api.example.test/items")!))
            .catchHTTPErrors()
            .respondToRateLimiting(maxWait: .seconds(5))
        // The outermost operator makes the request context: `retry`, or `respondToRateLimiting`.
        let chain = retried ? limited.retry(RetryPolicy(maxAttempts: 2, jitter: .none)) : limited
        let token = chain
            .sink(receiveCompletion: { _ in finished.withLock { $0 = true } }, receiveValue: { _ in })
        scheduler.advance(by: .seconds(1))
        #expect(finished.withLock { $0 })
        let weak = try #require(monitor.last.withLock { $0 })
        #expect(weak.object == nil)
        withExtendedLifetime(token) {}
    }
}
