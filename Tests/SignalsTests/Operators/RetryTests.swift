import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct RetryTests {
    @Test func retryReRunsTheUpstreamsWorkAndTearsDownEveryAttemptOnce() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.retry(3))
        probe.send(.value(1))
        probe.send(.failed(TestError(code: 1)))
        probe.send(.failed(TestError(code: 2)))
        #expect(probe.subscriptions == 3)
        #expect(probe.teardowns == 2)
        probe.send(.value(2))
        probe.send(.finished)
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(probe.teardowns == 3)
        token.cancel()
        #expect(probe.teardowns == 3)
    }

    @Test func retryIfPassesOtherFailuresThrough() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.retry(5) { $0.code == 1 })
        probe.send(.failed(TestError(code: 1)))
        probe.send(.failed(TestError(code: 2)))
        #expect(probe.subscriptions == 2)
        #expect(recorder.events == [.failed(TestError(code: 2))])
        withExtendedLifetime(token) {}
    }

    @Test func cancellingDuringARetryStopsRetrying() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let box = ContractTokenBox()
        box.token = probe.signal.retry(10) { _ in
            box.cancel()
            return true
        }.observe(recorder.observer)
        probe.send(.failed(TestError()))
        #expect(probe.subscriptions == 1)
        #expect(probe.teardowns == 1)
        #expect(recorder.events.isEmpty)
    }

    @Test func retryResubscribesUpstream() {
        let attempts = Counter()
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            let attempt = attempts.increment()
            return attempt < 3 ? Signal(error: TestError(code: attempt)) : Signal(value: attempt)
        }).retry(5))
        #expect(recorder.events == [.value(3), .finished])
        #expect(attempts.count == 3)
    }

    @Test func retryGivesUpAfterTheLimit() {
        let attempts = Counter()
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            Signal(error: TestError(code: attempts.increment()))
        }).retry(2))
        #expect(recorder.events == [.failed(TestError(code: 3))])
    }

    @Test func retryDoesNotGrowTheStack() {
        let attempts = Counter()
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            attempts.increment()
            return Signal(error: TestError())
        }).retry(100_000))
        #expect(attempts.count == 100_001)
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }
}
