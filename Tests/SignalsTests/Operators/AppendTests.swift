import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct AppendTests {
    @Test func appendSubscribesTheSecondAfterTheFirstFinishes() {
        let first = ManualSource<Int, TestError>()
        let second = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: first.signal.append(second.signal))
        first.send(1)
        #expect(second.subscriptions == 0)
        first.finish()
        #expect(second.subscriptions == 1)
        second.send(2)
        second.finish()
        #expect(recorder.events == [.value(1), .value(2), .finished])
        _ = token
    }

    @Test func aFailureOfTheFirstEndsItAndTheSecondIsNeverSubscribed() {
        let second = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(error: TestError(code: 1)).append(second.signal))
        #expect(recorder.events == [.failed(TestError(code: 1))])
        #expect(second.subscriptions == 0)
    }

    @Test func cancellationReachesWhicheverIsRunning() {
        let first = ManualSource<Int, TestError>()
        let second = ManualSource<Int, TestError>()
        let token = first.signal.append(second.signal).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        token.cancel()
        #expect(first.teardowns == 1)
        first.finish()
        #expect(second.subscriptions == 0)

        let other = first.signal.append(second.signal).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        first.finish()
        #expect(second.subscriptions == 1)
        other.cancel()
        #expect(second.teardowns == 1)
    }

    @Test func resubscribingRunsBothAgain() {
        let runs = Counter()
        let source = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        let joined = source.append(source)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: joined)
        second.subscribe(to: joined)
        #expect(first.values == [1, 2])
        #expect(second.values == [3, 4])
    }

    @Test func cancellingFromAnotherThreadWhileTheFirstFinishesLeavesNothingRunning() {
        for _ in 0..<200 {
            let first = ManualSource<Int, Never>()
            let second = ManualSource<Int, Never>()
            let recorder = SignalRecorder<Int, Never>()
            let token = recorder.subscribe(to: first.signal.append(second.signal))
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 { first.finish() } else { token.cancel() }
            }
            // Whichever won, nothing is left running and nothing arrived after the end.
            #expect(first.live == 0)
            #expect(second.live == 0)
            #expect(recorder.events.isEmpty)
        }
    }
}
