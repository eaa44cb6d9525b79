import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

/// The generator initializer and subscribing: cold, one terminal event, teardown once.
@Suite
struct SignalTests {
    @Test func generatorTeardownRunsOnceWhenItFinishesWhileSubscribing() {
        let teardowns = Counter()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal { observer in
            observer.send(1)
            observer.finish()
            observer.send(2)
            return { teardowns.increment() }
        })
        token.cancel()
        #expect(recorder.events == [.value(1), .finished])
        #expect(teardowns.count == 1)
    }

    @Test func generatorCancelledWhileSubscribingTearsDownOnceTheTeardownExists() {
        let teardowns = Counter()
        let box = ContractTokenBox()
        let token = CancellationToken()
        box.token = token
        let recorder = SignalRecorder<Int, Never>()
        Signal<Int, Never> { observer in
            // Cancelled from another thread before the teardown is returned.
            DispatchQueue.global().sync { box.cancel() }
            observer.send(1)
            return { teardowns.increment() }
        }.observe(recorder.observer, in: token)
        #expect(teardowns.count == 1)
        #expect(recorder.events.isEmpty)
        token.cancel()
        #expect(teardowns.count == 1)
    }

    @Test func generatorIsColdAndRunsPerSubscription() {
        let runs = Counter()
        let signal = Signal<Int, Never> { observer in
            observer.send(runs.increment())
            observer.finish()
            return nil
        }
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.values == [1])
        #expect(second.values == [2])
    }

    @Test func nothingAfterTerminalEvent() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal { observer in
            observer.send(1)
            observer.fail(TestError(code: 1))
            observer.send(2)
            observer.finish()
            observer.fail(TestError(code: 2))
            return nil
        })
        #expect(recorder.events == [.value(1), .failed(TestError(code: 1))])
        #expect(recorder.violations == 0)
    }

    @Test func teardownRunsOnceOnCancelAndNothingIsDeliveredAfter() {
        let teardowns = Counter()
        let captured = Locked<Observer<Int, Never>?>(nil)
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal { observer in
            captured.withLock { $0 = observer }
            return { teardowns.increment() }
        })
        captured.withLock { $0 }?.send(1)
        token.cancel()
        token.cancel()
        captured.withLock { $0 }?.send(2)
        captured.withLock { $0 }?.finish()
        #expect(recorder.values == [1])
        #expect(!recorder.isFinished && recorder.failure == nil)
        #expect(teardowns.count == 1)
    }

    @Test func releasingTheTokenCancels() {
        let teardowns = Counter()
        do {
            _ = Signal<Int, Never> { _ in { teardowns.increment() } }.sink { _ in }
        }
        #expect(teardowns.count == 1)
    }

    @Test func teardownRunsAfterTerminalEvent() {
        let teardowns = Counter()
        let token = Signal<Int, Never> { observer in
            observer.finish()
            return { teardowns.increment() }
        }.sink { _ in }
        #expect(teardowns.count == 1)
        token.cancel()
        #expect(teardowns.count == 1)
    }
}
