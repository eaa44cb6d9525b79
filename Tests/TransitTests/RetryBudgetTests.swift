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
        let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0.5, window: .seconds(10), scheduler: scheduler)
        for _ in 0..<100 { budget.recordRequest() }
        // 0.2 × 100 + 0.5 × 10 = 25 retries.
        let allowed = (0..<40).filter { _ in budget.withdrawRetry() }.count
        #expect(allowed == 25)
        // The window moves on: old requests and retries stop counting; the floor remains.
        scheduler.advance(by: .seconds(11))
        let later = (0..<40).filter { _ in budget.withdrawRetry() }.count
        #expect(later == 5)
    }

    @Test func aServerErrorStormCannotMultiplyTheLoad() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(503))
        let client = HTTPClient(transport: transport, scheduler: scheduler)
        let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0, window: .seconds(60), scheduler: scheduler)
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: 0.1, jitter: .none, budget: budget)
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
        let client = HTTPClient(transport: transport, scheduler: scheduler)
        let probes = (0..<10).map { _ in
            RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/x")!))
                .catchHTTPErrors()
                .retry(RetryPolicy(maxAttempts: 3, baseDelay: 0.1, jitter: .none), scheduler: scheduler))
        }
        scheduler.advance(by: .seconds(5))
        #expect(transport.requests.count == 30)
        #expect(probes.allSatisfy { $0.failure is HTTPServerError })
    }
}
