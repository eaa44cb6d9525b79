import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

@Suite("Retry budget")
struct RetryBudgetTests {
    let scheduler = TestScheduler()

    @Test func retriesStayUnderTheRatioPlusTheFloor() {
        let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0.5, window: .seconds(10))
        for _ in 0..<100 { budget.recordRequest(at: scheduler.now) }
        // 0.2 × 100 + 0.5 × 10 = 25 retries.
        let allowed = (0..<40).filter { _ in budget.withdrawRetry(at: scheduler.now) }.count
        #expect(allowed == 25)
        // The window moves on: old requests and retries stop counting; the floor remains.
        scheduler.advance(by: .seconds(11))
        let later = (0..<40).filter { _ in budget.withdrawRetry(at: scheduler.now) }.count
        #expect(later == 5)
    }

    @Test func slicesLeaveTheWindowOneByOne() {
        let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0, window: .seconds(10))
        for _ in 0..<100 { budget.recordRequest(at: scheduler.now) }  // slice 0
        scheduler.advance(by: .milliseconds(9_500))  // slice 9: slice 0 still counts
        #expect((0..<15).filter { _ in budget.withdrawRetry(at: scheduler.now) }.count == 15)
        scheduler.advance(by: .seconds(1))  // slice 10: slice 0 has left, slice 9's 15 retries count
        for _ in 0..<100 { budget.recordRequest(at: scheduler.now) }
        #expect((0..<10).filter { _ in budget.withdrawRetry(at: scheduler.now) }.count == 5)
        scheduler.advance(by: .milliseconds(300))  // still slice 10
        #expect(!budget.withdrawRetry(at: scheduler.now))
        scheduler.advance(by: .seconds(9))  // slice 19: slice 9 has left, slice 10 counts
        #expect((0..<20).filter { _ in budget.withdrawRetry(at: scheduler.now) }.count == 15)
    }

    /// A scheduler's time has an arbitrary origin: before or far after zero, the slice number was
    /// a negative array index or overflowed `Int64`, and either trapped.
    @Test(arguments: [Duration.seconds(-123), .seconds(-1), .milliseconds(-1), .seconds(Int64.max), .seconds(Int64.min)])
    func aClockAtAnyTimeWorks(now: Duration) {
        let budget = RetryBudget(ratio: 0.5, minRetriesPerSecond: 0, window: .seconds(10))
        for _ in 0..<4 { budget.recordRequest(at: now) }
        #expect((0..<5).filter { _ in budget.withdrawRetry(at: now) }.count == 2)
    }

    @Test func aServerErrorStormCannotMultiplyTheLoad() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(503))
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0, window: .seconds(60))
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), jitter: .none, budget: budget)
        let probes = (0..<50).map { index in
            RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/v1/\(index)")!))
                .catchHTTPErrors()
                .retry(policy, scheduler: scheduler))
        }
        scheduler.advance(by: .seconds(5))
        // Without the budget: 150 requests (3 attempts each). With it: 50 + at most 20 % retries.
        #expect(transport.requests.count <= 60)
        #expect(transport.requests.count >= 50)
        let refused = probes.filter { $0.failure is RetryBudgetExhausted }
        #expect(!refused.isEmpty)
        #expect(probes.allSatisfy { $0.terminalCount == 1 })
        let exhausted = refused.first?.failure as? RetryBudgetExhausted
        #expect((exhausted?.failure as? HTTPServerError)?.statusCode == 503)
        #expect(exhausted?.description.contains("retry budget") == true)
    }

    @Test func withoutABudgetPoliciesRetryAsBefore() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(503))
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let probes = (0..<10).map { _ in
            RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/x")!))
                .catchHTTPErrors()
                .retry(RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), jitter: .none), scheduler: scheduler))
        }
        scheduler.advance(by: .seconds(5))
        #expect(transport.requests.count == 30)
        #expect(probes.allSatisfy { $0.failure is HTTPServerError })
    }
}

/// A scheduler whose clock stands at `now`; it runs actions at once.
private struct FixedClock: Scheduler {
    let now: Duration
    func schedule(_ action: @escaping @Sendable () -> Void) { action() }
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        action()
        return CancellationToken()
    }
}
