import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct DeferredTests {
    @Test func deferredRunsItsFactoryOnEverySubscriptionAndNotBefore() {
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        #expect(runs.count == 0)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
    }

    @Test func tryDeferredFailsWithTheFactorysError() {
        let recorder = SignalRecorder<Int, any Error>()
        recorder.subscribe(to: Signal<Int, any Error>(tryDeferred: { throw TestError(code: 8) }))
        #expect(recorder.failure as? TestError == TestError(code: 8))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func tryDeferredRunsItsFactoryOnEverySubscriptionAndNotBefore() {
        let runs = Counter()
        let signal = Signal<Int, any Error>(tryDeferred: { Signal(value: runs.increment()) })
        #expect(runs.count == 0)
        let first = SignalRecorder<Int, any Error>()
        let second = SignalRecorder<Int, any Error>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.values == [1])
        #expect(second.values == [2])
        #expect(first.events.filter(\.isTerminal).count == 1)
        #expect(second.events.filter(\.isTerminal).count == 1)
    }

    @Test func aDeferredFactoryDoesNotRunInACancelledScope() {
        let runs = Counter()
        let token = CancellationToken()
        token.cancel()
        let delivered = Counter()
        let observer = Observer<Int, any Error> { _ in _ = delivered.increment() }
        Signal<Int, any Error>(tryDeferred: { Signal(value: runs.increment()) }).observe(observer, in: token)
        Signal<Int, any Error>(deferred: { Signal(value: runs.increment()) }).observe(observer, in: token)
        #expect(runs.count == 0)
        #expect(delivered.count == 0)
    }
}
