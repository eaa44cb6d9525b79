import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct MergeTests {
    @Test func forwardsValuesAsTheyArriveAndFinishesWhenAllFinish() {
        let a = PassthroughSubject<Int, TestError>()
        let b = PassthroughSubject<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: Signal.merge([a.signal, b.signal]))
        a.send(1)
        b.send(2)
        a.send(3)
        a.send(completion: .finished)
        b.send(4)
        #expect(!recorder.isFinished && recorder.failure == nil)
        b.send(completion: .finished)
        #expect(recorder.events == [.value(1), .value(2), .value(3), .value(4), .finished])
        _ = token
    }

    @Test func synchronousSignalsAreSubscribedInOrder() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal.merge([Signal(sequence: [1, 2]), Signal(value: 3), Signal(sequence: [4])]))
        #expect(recorder.events == [.value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func emptyListFinishesAtOnce() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>.merge([]))
        #expect(recorder.events == [.finished])
    }

    @Test func aFailureCancelsTheOthersAndFailsOnce() {
        let sources = (0..<3).map { _ in ManualSource<Int, TestError>() }
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: Signal.merge(sources.map(\.signal)))
        sources[0].send(1)
        sources[1].fail(TestError(code: 1))
        #expect(sources[0].teardowns == 1)
        #expect(sources[2].teardowns == 1)
        sources[0].send(2)
        sources[2].fail(TestError(code: 2))
        #expect(recorder.events == [.value(1), .failed(TestError(code: 1))])
        _ = token
    }

    @Test func cancellationReachesEverySignal() {
        let sources = (0..<3).map { _ in ManualSource<Int, TestError>() }
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: Signal.merge([sources[0].signal, sources[1].signal, sources[2].signal]))
        token.cancel()
        #expect(sources.map(\.teardowns) == [1, 1, 1])
        sources[1].send(1)
        #expect(recorder.events.isEmpty)
    }

    @Test func resubscribingRunsEverySignalAgain() {
        let runs = Counter()
        let source = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        let merged = Signal.merge([source, source])
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: merged)
        second.subscribe(to: merged)
        #expect(first.values == [1, 2])
        #expect(second.values == [3, 4])
        #expect(runs.count == 4)
    }

    @Test func signalsSendingOnManyThreadsAreSerialised() {
        let sources = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
        let detector = OverlapDetector()
        let values = Locked<[Int]>([])
        let terminals = Counter()
        let token = Signal.merge(sources.map(\.signal)).observe(Observer { event in
            detector.run {
                if let value = event.value { values.withLock { $0.append(value) } } else { terminals.increment() }
            }
        })
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            for value in 0..<500 { sources[index].send(index * 1000 + value) }
            sources[index].send(completion: .finished)
        }
        let received = values.withLock { $0 }
        #expect(received.count == 2000)
        for index in 0..<4 {
            let mine = received.filter { $0 / 1000 == index }
            #expect(mine == Array(index * 1000..<index * 1000 + 500))
        }
        #expect(terminals.count == 1)
        #expect(detector.count == 0)
        _ = token
    }
}
