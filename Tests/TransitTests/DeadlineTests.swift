import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// The client's total deadlines, in virtual time: each request fails at its own deadline, a
/// request that ends in time is never failed, and the deadlines share scheduler waits instead
/// of costing one each.
@Suite struct DeadlineTests {
    /// A `TestScheduler` that counts the waits asked of it.
    private final class CountingScheduler: Scheduler {
        let base = TestScheduler()
        let waits = Locked(0)

        var now: Duration { base.now }

        func schedule(_ action: @escaping @Sendable () -> Void) {
            base.schedule(action)
        }

        func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
            waits.withLock { $0 += 1 }
            return base.schedule(after: delay, action)
        }
    }

    /// What one subscription received.
    private final class Outcome: Sendable {
        let state = Locked<(values: Int, error: (any Error)?, finished: Bool)>((0, nil, false))

        var timedOut: Bool {
            state.withLock { ($0.error as? TransportError)?.code == .timedOut }
        }

        var succeeded: Bool {
            state.withLock { $0.values == 1 && $0.finished && $0.error == nil }
        }

        var ended: Bool {
            state.withLock { $0.finished || $0.error != nil }
        }

        func subscribe<T>(to signal: Signal<T, any Error>) -> CancellationToken {
            signal.sink(
                receiveCompletion: { completion in
                    self.state.withLock { state in
                        switch completion {
                        case .finished: state.finished = true
                        case .failure(let error): state.error = error
                        }
                    }
                },
                receiveValue: { _ in self.state.withLock { $0.values += 1 } }
            )
        }
    }

    private func request(_ path: String) -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.test\(path)")!)
    }

    @Test func requestsThatEndInTimeShareOneWaitInsteadOfOneEach() {
        let scheduler = CountingScheduler()
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport) {
            $0.deadline = .after(.seconds(300))
            $0.scheduler = scheduler
        }
        for index in 0..<1_000 {
            let outcome = Outcome()
            let token = outcome.subscribe(to: client.send(request("/items/\(index)")))
            #expect(outcome.succeeded)
            token.cancel()
        }
        // One wait for the first deadline; every later deadline is after it, so that wait covers
        // them all. A wait per request would be 1,000.
        #expect(scheduler.waits.withLock { $0 } == 1)
        #expect(scheduler.base.pendingCount == 1)
        // When it runs it finds nothing due and nothing left: no new wait.
        scheduler.base.advance(by: .seconds(300))
        #expect(scheduler.base.pendingCount == 0)
        #expect(scheduler.waits.withLock { $0 } == 1)
    }

    @Test func eachRequestFailsAtItsOwnDeadlineAShorterOneAddedLaterIncluded() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(StubResponse.text("late").delayed(by: .seconds(60)))
        let client = HTTPClient(transport: transport) {
            $0.deadline = .after(.seconds(10))
            $0.scheduler = scheduler
        }
        let long = Outcome()
        let short = Outcome()
        let tokens = [
            long.subscribe(to: client.send(request("/long"))),
            short.subscribe(to: client.send(request("/short"), options: RequestOptions(deadline: .after(.seconds(3))))),
        ]
        scheduler.advance(by: .seconds(3) - .milliseconds(1))
        #expect(!short.ended)
        scheduler.advance(by: .milliseconds(1))
        #expect(short.timedOut)
        #expect(!long.ended)
        scheduler.advance(by: .seconds(7) - .milliseconds(1))
        #expect(!long.ended)
        scheduler.advance(by: .milliseconds(1))
        #expect(long.timedOut)
        _ = tokens
    }

    @Test func aRequestStartedWhileAWaitIsPendingFailsAtItsDeadlineNotAtTheWaits() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(StubResponse.text("late").delayed(by: .seconds(60)))
        let client = HTTPClient(transport: transport) {
            $0.deadline = .after(.seconds(10))
            $0.scheduler = scheduler
        }
        let first = Outcome()
        let firstToken = first.subscribe(to: client.send(request("/first")))
        scheduler.advance(by: .seconds(4))
        firstToken.cancel()  // its wait (at 10 s) stays pending
        let second = Outcome()
        let secondToken = second.subscribe(to: client.send(request("/second")))
        scheduler.advance(by: .seconds(6))  // 10 s: the first wait runs, nothing is due
        #expect(!second.ended)
        scheduler.advance(by: .seconds(4) - .milliseconds(1))
        #expect(!second.ended)
        scheduler.advance(by: .milliseconds(1))  // 14 s: the second request's deadline
        #expect(second.timedOut)
        #expect(!first.ended, "a cancelled request gets nothing")
        _ = secondToken
    }

    @Test func aRequestThatEndsInTimeIsNeverFailedByItsDeadline() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(StubResponse.text("ok").delayed(by: .seconds(1)))
        let client = HTTPClient(transport: transport) {
            $0.deadline = .after(.seconds(5))
            $0.scheduler = scheduler
        }
        let outcome = Outcome()
        let token = outcome.subscribe(to: client.send(request("/quick")))
        scheduler.advance(by: .seconds(1))
        #expect(outcome.succeeded)
        scheduler.advance(by: .seconds(10))
        #expect(outcome.succeeded)
        #expect(scheduler.pendingCount == 0)
        _ = token
    }
}
