import Dispatch
import Signals
import Testing

@Suite struct CoreTests {
    @Test func valueSendsThenFinishes() {
        let recorder = Recorder<Int, Never>()
        recorder.subscribe(to: Signal(value: 7))
        #expect(recorder.events == [.value(7), .finished])
    }

    @Test func generatorIsColdAndRunsPerSubscription() {
        let runs = Counter()
        let signal = Signal<Int, Never> { observer in
            observer.send(runs.increment())
            observer.finish()
            return nil
        }
        let first = Recorder<Int, Never>()
        let second = Recorder<Int, Never>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.values == [1])
        #expect(second.values == [2])
    }

    @Test func nothingAfterTerminalEvent() {
        let recorder = Recorder<Int, TestError>()
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
        let captured = Mutex<Observer<Int, Never>?>(nil)
        let recorder = Recorder<Int, Never>()
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
        #expect(recorder.completion == nil)
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

    @Test func bagCancelsEverythingWhenReleased() {
        let teardowns = Counter()
        var bag: CancellationBag? = CancellationBag()
        for _ in 0..<3 {
            Signal<Int, Never> { _ in { teardowns.increment() } }.sink { _ in }.store(in: bag!)
        }
        #expect(bag?.count == 3)
        bag = nil
        #expect(teardowns.count == 3)
    }

    @Test func bagCanBeEmptiedByHand() {
        let teardowns = Counter()
        let bag = CancellationBag()
        Signal<Int, Never> { _ in { teardowns.increment() } }.sink { _ in }.store(in: bag)
        bag.cancelAll()
        #expect(teardowns.count == 1)
        #expect(bag.count == 0)
    }

    @Test func mapFilterCompactMap() {
        let recorder = Recorder<String, Never>()
        recorder.subscribe(to: Signal(sequence: 1...6).filter { $0 % 2 == 0 }.map { $0 * 10 }.compactMap { $0 == 40 ? nil : "\($0)" })
        #expect(recorder.events == [.value("20"), .value("60"), .finished])
    }

    @Test func retryResubscribesUpstream() {
        let attempts = Counter()
        let recorder = Recorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            let attempt = attempts.increment()
            return attempt < 3 ? Signal(error: TestError(code: attempt)) : Signal(value: attempt)
        }).retry(5))
        #expect(recorder.events == [.value(3), .finished])
        #expect(attempts.count == 3)
    }

    @Test func retryGivesUpAfterTheLimit() {
        let attempts = Counter()
        let recorder = Recorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            Signal(error: TestError(code: attempts.increment()))
        }).retry(2))
        #expect(recorder.events == [.failed(TestError(code: 3))])
    }

    @Test func retryDoesNotGrowTheStack() {
        let attempts = Counter()
        let recorder = Recorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(deferred: {
            attempts.increment()
            return Signal(error: TestError())
        }).retry(100_000))
        #expect(attempts.count == 100_001)
        #expect(recorder.terminalCount == 1)
    }

    @Test func testSchedulerRunsInVirtualTime() {
        let scheduler = TestScheduler()
        let ran = Mutex<[Int]>([])
        scheduler.schedule(after: .seconds(30)) { ran.withLock { $0.append(30) } }
        scheduler.schedule(after: .seconds(10)) { ran.withLock { $0.append(10) } }
        let cancelled = scheduler.schedule(after: .seconds(20)) { ran.withLock { $0.append(20) } }
        cancelled.cancel()
        scheduler.advance(by: .seconds(29))
        #expect(ran.withLock { $0 } == [10])
        scheduler.advance(by: .seconds(1))
        #expect(ran.withLock { $0 } == [10, 30])
        #expect(scheduler.now == .seconds(30))
    }

    /// A cancelled `DispatchQueue` wait is withdrawn, not left queued until its time: with
    /// `asyncAfter`, a one-hour wait (a request deadline, say) would keep its token for an hour
    /// after being cancelled, and thousands of them under load.
    @Test func aCancelledDispatchQueueWaitIsNotKeptUntilItsTime() {
        weak var wait: AnyObject?
        let ran = Mutex(false)
        do {
            let token = DispatchQueue.global().schedule(after: .seconds(3600)) { ran.withLock { $0 = true } }
            wait = token
            token.cancel()
        }
        #expect(wait == nil)
        #expect(ran.withLock { $0 } == false)
    }

    /// Dropping the token of a `DispatchQueue` wait without cancelling it does not cancel it:
    /// the action still runs once, on the queue.
    @Test func aDispatchQueueWaitRunsOnceWhenItsTokenIsDropped() {
        let ran = DispatchSemaphore(value: 0)
        let count = Mutex(0)
        do {
            _ = DispatchQueue.global().schedule(after: .milliseconds(5)) {
                count.withLock { $0 += 1 }
                ran.signal()
            }
        }
        // Generous: the wait is 5 ms; only a stalled machine takes more than 30 s.
        #expect(ran.wait(timeout: .now() + 30) == .success)
        #expect(count.withLock { $0 } == 1)
    }
}
