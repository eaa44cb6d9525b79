import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

/// `(Int, String)` is not `Equatable`; tests compare pairs through this.
struct TestPair<A: Equatable & Sendable, B: Equatable & Sendable>: Equatable, Sendable {
    let a: A
    let b: B
    init(_ a: A, _ b: B) {
        self.a = a
        self.b = b
    }
}

extension SignalRecorder {
    func pairs<A, B>() -> [TestPair<A, B>] where Output == (A, B) {
        values.map { TestPair($0.0, $0.1) }
    }
}

@Suite struct ZipTests {
    @Test func pairsValuesInOrder() {
        let left = PassthroughSubject<Int, TestError>()
        let right = PassthroughSubject<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.zip(right.signal))
        left.send(1)
        left.send(2)
        left.send(3)
        #expect(recorder.events.isEmpty)
        right.send("a")
        right.send("b")
        #expect(recorder.pairs() == [TestPair(1, "a"), TestPair(2, "b")])
        right.send("c")
        right.send("d")
        left.send(4)
        #expect(recorder.pairs() == [TestPair(1, "a"), TestPair(2, "b"), TestPair(3, "c"), TestPair(4, "d")])
        _ = token
    }

    @Test func synchronousSignals() {
        let recorder = SignalRecorder<(Int, String), Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2, 3]).zip(Signal(sequence: ["a", "b"])))
        #expect(recorder.pairs() == [TestPair(1, "a"), TestPair(2, "b")])
        #expect(recorder.isFinished)
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func finishesWhenAFinishedSideHasNothingLeftAndCancelsTheOther() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.zip(right.signal))
        left.send(1)
        left.finish()
        #expect(!recorder.isFinished && recorder.failure == nil)
        right.send("a")
        #expect(recorder.pairs() == [TestPair(1, "a")])
        #expect(recorder.isFinished)
        #expect(right.teardowns == 1)
        right.send("b")
        #expect(recorder.events.count == 2)
        #expect(recorder.violations == 0)
        _ = token
    }

    @Test func finishesAtOnceWhenASideFinishesWithNothingWaiting() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.zip(right.signal))
        right.send("a")
        left.finish()
        #expect(recorder.isFinished)
        #expect(recorder.values.isEmpty)
        #expect(right.teardowns == 1)
        _ = token
    }

    @Test func aFailureCancelsTheOtherAndFailsOnce() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.zip(right.signal))
        left.send(1)
        right.fail(TestError(code: 5))
        #expect(left.teardowns == 1)
        left.fail(TestError(code: 6))
        #expect(recorder.failure == TestError(code: 5))
        #expect(recorder.events.count == 1)
        _ = token
    }

    @Test func cancellationReachesBothSignals() {
        let left = ManualSource<Int, TestError>()
        let right = ManualSource<String, TestError>()
        let recorder = SignalRecorder<(Int, String), TestError>()
        let token = recorder.subscribe(to: left.signal.zip(right.signal))
        left.send(1)
        token.cancel()
        #expect(left.teardowns == 1)
        #expect(right.teardowns == 1)
        right.send("a")
        #expect(recorder.events.isEmpty)
    }

    @Test func resubscribingRunsBothAgain() {
        let runs = Counter()
        let left = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        let zipped = left.zip(left)
        let first = SignalRecorder<(Int, Int), Never>()
        let second = SignalRecorder<(Int, Int), Never>()
        first.subscribe(to: zipped)
        second.subscribe(to: zipped)
        #expect(first.pairs() == [TestPair(1, 2)])
        #expect(second.pairs() == [TestPair(3, 4)])
    }

    @Test func sidesSendingOnTwoThreadsPairInOrder() {
        let count = 2_000
        let left = PassthroughSubject<Int, Never>()
        let right = PassthroughSubject<Int, Never>()
        let detector = OverlapDetector()
        let recorder = SignalRecorder<(Int, Int), Never>()
        let token = left.signal.zip(right.signal).observe(Observer { event in
            detector.run { recorder.observer.send(event) }
        })
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let side = index == 0 ? left : right
            for value in 0..<count { side.send(value) }
            side.send(completion: .finished)
        }
        #expect(recorder.pairs() == (0..<count).map { TestPair($0, $0) })
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        #expect(recorder.isFinished)
        #expect(detector.count == 0)
        _ = token
    }
}
