import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct CombineLatestTests {
    @Test func sendsLatestPairsOnceBothHaveAValue() {
        let left = PassthroughSubject<Int, TestError>()
        let right = PassthroughSubject<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.combineLatest(right.signal))
        left.send(1)
        left.send(2)
        #expect(recorder.events.isEmpty)
        right.send("a")
        left.send(3)
        right.send("b")
        #expect(recorder.pairs() == [TestPair(2, "a"), TestPair(3, "a"), TestPair(3, "b")])
        _ = token
    }

    @Test func finishesWhenBothFinish() {
        let left = PassthroughSubject<Int, TestError>()
        let right = PassthroughSubject<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.combineLatest(right.signal))
        left.send(1)
        right.send("a")
        left.send(completion: .finished)
        right.send("b")
        #expect(!recorder.isFinished && recorder.failure == nil)
        right.send(completion: .finished)
        #expect(recorder.pairs() == [TestPair(1, "a"), TestPair(1, "b")])
        #expect(recorder.isFinished)
        _ = token
    }

    @Test func finishesEarlyWhenASideFinishesWithoutAValue() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.combineLatest(right.signal))
        right.send("a")
        left.finish()
        #expect(recorder.values.isEmpty)
        #expect(recorder.isFinished)
        #expect(right.teardowns == 1)
        _ = token
    }

    @Test func synchronousSignals() {
        let recorder = SignalRecorder<(Int, String), Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2]).combineLatest(Signal(sequence: ["a", "b"])))
        #expect(recorder.pairs() == [TestPair(2, "a"), TestPair(2, "b")])
        #expect(recorder.isFinished)
    }

    @Test func aFailureCancelsTheOtherAndFailsOnce() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.combineLatest(right.signal))
        left.send(1)
        right.send("a")
        left.fail(TestError(code: 7))
        #expect(right.teardowns == 1)
        right.send("b")
        right.fail(TestError(code: 8))
        #expect(recorder.pairs() == [TestPair(1, "a")])
        #expect(recorder.failure == TestError(code: 7))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        _ = token
    }

    @Test func cancellationReachesBothSignals() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.combineLatest(right.signal))
        token.cancel()
        #expect(left.teardowns == 1)
        #expect(right.teardowns == 1)
        left.send(1)
        right.send("a")
        #expect(recorder.events.isEmpty)
    }

    @Test func resubscribingRunsBothAgain() {
        let runs = Counter()
        let source = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        let combined = source.combineLatest(source)
        let first = SignalRecorder<(Int, Int), Never>()
        let second = SignalRecorder<(Int, Int), Never>()
        first.subscribe(to: combined)
        second.subscribe(to: combined)
        #expect(first.pairs() == [TestPair(1, 2)])
        #expect(second.pairs() == [TestPair(3, 4)])
    }

    @Test func sidesSendingOnTwoThreads() {
        let count = 2_000
        let left = PassthroughSubject<Int, Never>()
        let right = PassthroughSubject<Int, Never>()
        let detector = OverlapDetector()
        let recorder = SignalRecorder<(Int, Int), Never>()
        let token = left.signal.combineLatest(right.signal).observe(Observer { event in
            detector.run { recorder.observer.send(event) }
        })
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let side = index == 0 ? left : right
            for value in 1...count { side.send(value) }
            side.send(completion: .finished)
        }
        let pairs = recorder.pairs() as [TestPair<Int, Int>]
        // Each side's values only go up, and the last pair holds both last values.
        #expect(pairs.map(\.a) == pairs.map(\.a).sorted())
        #expect(pairs.map(\.b) == pairs.map(\.b).sorted())
        #expect(pairs.last == TestPair(count, count))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        #expect(recorder.isFinished)
        #expect(detector.count == 0)
        _ = token
    }
}
