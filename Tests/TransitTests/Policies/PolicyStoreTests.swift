import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("Policy store: limits a fleet shares")
struct PolicyStoreTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    /// The first answer of `signal`, delivered at once (the in-memory store answers synchronously).
    private func answer<Value: Sendable>(_ signal: Signal<Value, any Error>) -> Value? {
        let value = SharedValue<Value?>(nil)
        withExtendedLifetime(signal.sink(receiveCompletion: { _ in }, receiveValue: { received in value.update { $0 = received } })) {}
        return value.value
    }

    /// A client of the fleet: its own transport, policies and monitors, the store shared.
    private struct Process {
        let transport: StubTransport
        let client: HTTPClient
        let log = EventLog()

        init(
            scheduler: TestScheduler,
            rateLimiter: RateLimiter? = nil,
            cooldowns: Cooldowns? = nil,
            stub: (StubTransport) -> Void = { $0.stub(.get).thenRespond(.text("ok")) }
        ) {
            let transport = StubTransport(scheduler: scheduler)
            stub(transport)
            self.transport = transport
            let log = self.log
            client = HTTPClient(transport: transport) {
                $0.scheduler = scheduler
                $0.rateLimiter = rateLimiter
                $0.cooldowns = cooldowns
                $0.monitors = [log]
                // No deadline: the scheduler's pending actions are the policies' own.
                $0.deadline = .unlimited
            }
        }
    }

    // MARK: The in-memory store's arithmetic

    @Test func aBucketGrantsItsBurstThenReservesTurnsInOrderAndRefusesWaitsBeyondTheAllowance() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        let bucket = PolicyStoreBucket(requestsPerSecond: 4, burst: 2)
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: nil)) == .now)
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: nil)) == .now)
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: nil)) == .after(.milliseconds(250)))
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: nil)) == .after(.milliseconds(500)))
        // Refused: nothing is taken, so the next caller's turn is unchanged.
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: .milliseconds(600))) == .refused(wait: .milliseconds(750)))
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: .milliseconds(750))) == .after(.milliseconds(750)))
        // Another key has its own bucket; a quiet spell refills this one.
        #expect(answer(store.takeTokens(1, forKey: "other", bucket: bucket, maxWait: nil)) == .now)
        scheduler.advance(by: .seconds(2))
        #expect(answer(store.takeTokens(2, forKey: "k", bucket: bucket, maxWait: .zero)) == .now)
        #expect(answer(store.takeTokens(1, forKey: "k", bucket: bucket, maxWait: .zero)) == .refused(wait: .milliseconds(250)))
    }

    @Test func aCooldownIsExtendedNeverShortenedAndReadWithoutACall() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        #expect(answer(store.extendCooldown(forKey: "k", by: .seconds(5), statusCode: 429)) != nil)
        #expect(answer(store.extendCooldown(forKey: "k", by: .seconds(2), statusCode: 503)) != nil)
        let calls = store.callCount
        #expect(store.cooldown(forKey: "k") == PolicyStoreCooldown(remaining: .seconds(5), statusCode: 429))
        scheduler.advance(by: .seconds(4))
        #expect(store.cooldown(forKey: "k")?.remaining == .seconds(1))
        #expect(answer(store.extendCooldown(forKey: "k", by: .seconds(3), statusCode: 503)) != nil)
        #expect(store.cooldown(forKey: "k") == PolicyStoreCooldown(remaining: .seconds(3), statusCode: 503))
        scheduler.advance(by: .seconds(3))
        #expect(store.cooldown(forKey: "k") == nil)
        #expect(store.callCount == calls + 1)
    }

    @Test func aNamedBudgetCountsTheFleetOverItsWindow() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        #expect(answer(store.recordBudget("b", requests: 10, retries: 1, window: .seconds(10))) == PolicyStoreBudgetCounts(requests: 10, retries: 1))
        scheduler.advance(by: .seconds(5))
        #expect(answer(store.recordBudget("b", requests: 4, retries: 2, window: .seconds(10))) == PolicyStoreBudgetCounts(requests: 14, retries: 3))
        #expect(answer(store.recordBudget("other", requests: 1, retries: 0, window: .seconds(10))) == PolicyStoreBudgetCounts(requests: 1, retries: 0))
        scheduler.advance(by: .seconds(6))
        #expect(answer(store.recordBudget("b", requests: 0, retries: 0, window: .seconds(10))) == PolicyStoreBudgetCounts(requests: 4, retries: 2))
    }

    // MARK: Rate limits

    @Test func twoProcessesSharingAStoreShareOneLimit() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        let processes = (0..<2).map { _ in
            Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 2, burst: 1, sharing: PolicySharing(store: store, fleetSize: 2)))
        }
        let probes = (0..<4).map { index in RequestProbe(processes[index % 2].client.send(get("https://api.example.com/v1/\(index)"))) }
        // One bucket for both: 0 goes, then one every 0.5 s in the order the store was asked.
        #expect(processes.map(\.transport.requests.count) == [1, 0])
        scheduler.advance(by: .milliseconds(499))
        #expect(processes.map(\.transport.requests.count) == [1, 0])
        scheduler.advance(by: .milliseconds(1))
        #expect(processes.map(\.transport.requests.count) == [1, 1])
        scheduler.advance(by: .milliseconds(500))
        #expect(processes.map(\.transport.requests.count) == [2, 1])
        scheduler.advance(by: .milliseconds(500))
        #expect(probes.allSatisfy { $0.values.first?.text == "ok" })
        // The wait is reported like the in-process limiter's.
        #expect(processes[1].log.events(named: "rateLimitWaited").count == 2)
    }

    @Test func aRequestCancelledWhileTheStoreAnswersIsNotSent() {
        let store = InMemoryPolicyStore(scheduler: scheduler, latency: .milliseconds(50))
        let process = Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 1, sharing: PolicySharing(store: store, fleetSize: 1)))
        let probe = RequestProbe(process.client.send(get("https://api.example.com/v1/a")))
        probe.cancel()
        scheduler.advance(by: .seconds(1))
        #expect(process.transport.requests.isEmpty)
        #expect(scheduler.pendingCount == 0)
        // The store was never told to take the token: the next request goes at once.
        let next = RequestProbe(process.client.send(get("https://api.example.com/v1/b")))
        scheduler.advance(by: .milliseconds(50))
        #expect(next.values.first?.text == "ok")
    }

    @Test func whenTheStoreFailsEachProcessKeepsToItsShareAndTheMonitorsAreTold() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        store.setOutage(.failing)
        let sharing = PolicySharing(store: store, fleetSize: 4, quarantine: .seconds(5))
        let process = Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 8, burst: 4, sharing: sharing))
        let probes = (0..<3).map { index in RequestProbe(process.client.send(get("https://api.example.com/v1/\(index)"))) }
        // The local share: 8 / 4 = 2 a second, a burst of 4 / 4 = 1.
        #expect(process.transport.requests.count == 1)
        scheduler.advance(by: .milliseconds(500))
        #expect(process.transport.requests.count == 2)
        scheduler.advance(by: .milliseconds(500))
        #expect(probes.allSatisfy { $0.values.first?.text == "ok" })
        let lost = process.log.events(named: "policyStoreLost")
        #expect(lost.count == 1)
        #expect(lost.first?.description.contains("policy store lost") == true)
        // Quarantined: the store was asked once, not once per request.
        #expect(store.callCount == 1)
        // Back once the quarantine is over and the store answers.
        store.setOutage(.none)
        scheduler.advance(by: .seconds(4))
        _ = RequestProbe(process.client.send(get("https://api.example.com/v1/x")))
        #expect(store.callCount == 2)
        #expect(process.log.events(named: "policyStoreRestored").map(\.kind.restoredAfter) == [.seconds(5)])
    }

    @Test func aStoreThatDoesNotAnswerWithinTheDeadlineIsLost() throws {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        store.setOutage(.silent)
        let sharing = PolicySharing(store: store, fleetSize: 2, deadline: .milliseconds(200))
        let process = Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 10, burst: 2, sharing: sharing))
        let probe = RequestProbe(process.client.send(get("https://api.example.com/v1/a")))
        scheduler.advance(by: .milliseconds(199))
        #expect(process.transport.requests.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(probe.values.first?.text == "ok")
        let lost = try #require(process.log.events(named: "policyStoreLost").first)
        guard case .policyStoreLost(let error, _) = lost.kind else { return }
        #expect((error as? PolicyStoreUnavailable)?.reason == .deadline(.milliseconds(200)))
    }

    @Test func failingOpenOrClosedAreChoices() throws {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        store.setOutage(.failing)
        let open = Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 1, sharing: PolicySharing(store: store, fleetSize: 4, fallback: .failOpen)))
        let opened = (0..<5).map { index in RequestProbe(open.client.send(get("https://api.example.com/v1/\(index)"))) }
        #expect(opened.allSatisfy { $0.values.first?.text == "ok" })
        let closed = Process(scheduler: scheduler, rateLimiter: RateLimiter(requestsPerSecond: 1, sharing: PolicySharing(store: store, fleetSize: 4, fallback: .failClosed)))
        let refused = (0..<2).map { index in RequestProbe(closed.client.send(get("https://api.example.com/v1/\(index)"))) }
        #expect(closed.transport.requests.isEmpty)
        #expect((refused[0].failure as? PolicyStoreUnavailable)?.reason == .callFailed)
        #expect((refused[1].failure as? PolicyStoreUnavailable)?.reason == .quarantined)
        #expect(refused[1].failure.map { String(describing: $0) }?.contains("fail closed") == true)
    }

    // MARK: Cooldowns

    @Test func aRetryAfterSeenByOneProcessHoldsBackTheFleet() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        let first = Process(scheduler: scheduler, cooldowns: Cooldowns(sharing: PolicySharing(store: store, fleetSize: 2))) {
            $0.stub(.get).thenRespond(.status(429, headers: ["Retry-After": "2"])).thenRespond(.text("ok"))
        }
        let second = Process(scheduler: scheduler, cooldowns: Cooldowns(sharing: PolicySharing(store: store, fleetSize: 2)))
        #expect(RequestProbe(first.client.send(get("https://api.example.com/v1/a"))).values.first?.statusCode == 429)
        let held = RequestProbe(second.client.send(get("https://api.example.com/v1/b")))
        scheduler.advance(by: .milliseconds(1999))
        #expect(second.transport.requests.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(held.values.first?.text == "ok")
        #expect(second.log.events(named: "cooldownWait").count == 1)
    }

    @Test func aFleetCooldownLongerThanTheWaitFailsFastWithoutAResponse() throws {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        #expect(answer(store.extendCooldown(forKey: "https://api.example.com:443/v1", by: .seconds(30), statusCode: 503)) != nil)
        let process = Process(scheduler: scheduler, cooldowns: Cooldowns(maxWait: .seconds(10), sharing: PolicySharing(store: store, fleetSize: 2)))
        let refused = RequestProbe(process.client.send(get("https://api.example.com/v1/b")))
        let error = try #require(refused.failure as? HTTPServerError)
        guard case .serviceUnavailable(let retryAfter, let response) = error else {
            Issue.record("not a 503: \(error)")
            return
        }
        #expect(retryAfter == .seconds(30))
        #expect(response == nil)
        #expect(process.transport.requests.isEmpty)
    }

    @Test func aCooldownSeenHereStillHoldsWhileTheStoreIsDown() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        store.setOutage(.failing)
        let process = Process(scheduler: scheduler, cooldowns: Cooldowns(sharing: PolicySharing(store: store, fleetSize: 2))) {
            $0.stub(.get).thenRespond(.status(429, headers: ["Retry-After": "3"])).thenRespond(.text("ok"))
        }
        _ = RequestProbe(process.client.send(get("https://api.example.com/v1/a")))
        let held = RequestProbe(process.client.send(get("https://api.example.com/v1/b")))
        scheduler.advance(by: .milliseconds(2999))
        #expect(process.transport.requests.count == 1)
        scheduler.advance(by: .milliseconds(1))
        #expect(held.values.first?.text == "ok")
        #expect(process.log.events(named: "policyStoreLost").count == 1)
    }

    // MARK: Retry budgets

    /// Fails every request with a 503; retries through `budget`.
    private func storm(_ process: Process, budget: RetryBudget, count: Int, from start: Int = 0) -> [RequestProbe<HTTPResponse, any Error>] {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), jitter: .none, budget: budget)
        return (start..<(start + count)).map { index in
            RequestProbe(process.client.send(get("https://api.example.com/v1/\(index)")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        }
    }

    @Test func theFleetsRetriesStayWithinTheSharedBudget() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        let processes = (0..<2).map { _ in Process(scheduler: scheduler) { $0.stub(.get).thenRespond(.status(503)) } }
        // A floor of 1 retry a second over 10 s: 10 retries for the fleet, not 10 for each process.
        let budgets = processes.indices.map { _ in
            RetryBudget(ratio: 0, minRetriesPerSecond: 1, window: .seconds(10), name: "partner", sharing: PolicySharing(store: store, fleetSize: 2, batchInterval: .zero))
        }
        let probes = storm(processes[0], budget: budgets[0], count: 10) + storm(processes[1], budget: budgets[1], count: 10)
        scheduler.advance(by: .seconds(5))
        let sent = processes.map(\.transport.requests.count).reduce(0, +)
        #expect(sent == 20 + 10)
        #expect(probes.allSatisfy { $0.terminalCount == 1 })
        // A budget of another name is another budget.
        let other = RetryBudget(ratio: 0, minRetriesPerSecond: 1, window: .seconds(10), name: "other", sharing: PolicySharing(store: store, fleetSize: 2))
        let alone = Process(scheduler: scheduler) { $0.stub(.get).thenRespond(.status(503)) }
        _ = storm(alone, budget: other, count: 5, from: 100)
        scheduler.advance(by: .seconds(5))
        #expect(alone.transport.requests.count == 5 + 10)
    }

    @Test func whenTheStoreFailsABudgetKeepsToItsShareOfTheFloor() {
        let store = InMemoryPolicyStore(scheduler: scheduler)
        store.setOutage(.failing)
        let process = Process(scheduler: scheduler) { $0.stub(.get).thenRespond(.status(503)) }
        // Floor: 1 a second over 10 s for the fleet, so 10 / 5 = 2 retries for this process.
        let budget = RetryBudget(ratio: 0, minRetriesPerSecond: 1, window: .seconds(10), sharing: PolicySharing(store: store, fleetSize: 5))
        let probes = storm(process, budget: budget, count: 6)
        scheduler.advance(by: .seconds(5))
        #expect(process.transport.requests.count == 6 + 2)
        #expect(probes.allSatisfy { $0.failure is RetryBudgetExhausted })
        #expect(process.log.events(named: "policyStoreLost").count == 1)
    }
}

extension HTTPEvent.Kind {
    /// The `after` of a `policyStoreRestored` event.
    fileprivate var restoredAfter: Duration? {
        if case .policyStoreRestored(let after) = self { after } else { nil }
    }
}
