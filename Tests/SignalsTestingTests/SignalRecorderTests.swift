import Dispatch
import Signals
import Testing
import SignalsTesting

private struct Failure: Error, Equatable {}

@Suite struct SignalRecorderTests {
    @Test func recordsValuesAndTheTerminalEventInOrder() {
        let subject = PassthroughSubject<Int, Failure>()
        let recorder = SignalRecorder(subject.signal)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .failure(Failure()))
        #expect(recorder.events == [.value(1), .value(2), .failed(Failure())])
        #expect(recorder.values == [1, 2])
        #expect(recorder.failure == Failure())
        #expect(!recorder.isFinished)
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        #expect(recorder.violations == 0)
    }

    @Test func stampsEveryEventWithTheSchedulersTime() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder(Signal<Int, Never>(value: 7).delay(for: .seconds(3), scheduler: scheduler), scheduler: scheduler)
        #expect(recorder.events.isEmpty && recorder.times.isEmpty)
        scheduler.advance(by: .seconds(3))
        #expect(recorder.events == [.value(7), .finished])
        #expect(recorder.times == [.seconds(3), .seconds(3)])
        #expect(recorder.isFinished)
    }

    @Test func cancelEndsTheSubscriptionItMade() {
        let subject = PassthroughSubject<Int, Never>()
        let recorder = SignalRecorder(subject.signal)
        subject.send(1)
        recorder.cancel()
        subject.send(2)
        #expect(recorder.values == [1])
        #expect(!recorder.isFinished && recorder.failure == nil)
    }

    @Test func releasingTheRecorderEndsItsSubscription() {
        let teardowns = Locked(0)
        let signal = Signal<Int, Never> { _ in { teardowns.withLock { $0 += 1 } } }
        do {
            let recorder = SignalRecorder(signal)
            withExtendedLifetime(recorder) {}
        }
        #expect(teardowns.withLock { $0 } == 1)
    }

    @Test func countsEventsAfterATerminalEventAsViolations() {
        // A hand-made observer call sequence that breaks the contract, as a buggy operator would.
        let recorder = SignalRecorder<Int, Never>()
        recorder.observer.send(.finished)
        recorder.observer.send(.value(1))
        #expect(recorder.violations == 1)
    }

    @Test func recordsFromManyThreads() {
        let recorder = SignalRecorder<Int, Never>()
        let observer = recorder.observer
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for value in 0..<250 { observer.send(.value(thread * 1_000 + value)) }
        }
        #expect(recorder.values.count == 1_000)
    }

    @Test func describesItsRecordsForFailureMessages() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        recorder.observer.send(.value(1))
        #expect(recorder.description == "SignalRecorder[value(1) at 0.0 seconds]")
    }
}

@Suite struct MarblesTests {
    @Test func parsesValuesTicksGroupsAndTheEnd() throws {
        let events = try Marbles.parse("a-b [cd]-|")
        #expect(events.map(\.tick) == [0, 2, 3, 3, 5])
        #expect(events.map(\.symbol) == [.value("a"), .value("b"), .value("c"), .value("d"), .finished])
        #expect(try Marbles.parse("--#").map(\.symbol) == [.failed])
    }

    @Test(arguments: ["a[b", "a]", "[[a]]", "[]", "a|b", "[a-b]"])
    func rejectsMalformedDiagrams(_ diagram: String) {
        #expect(throws: Marbles.SyntaxError.self) { try Marbles.parse(diagram) }
    }

    @Test func drawsEventsByTick() {
        #expect(Marbles.draw([(0, "a"), (2, "b"), (2, "c"), (4, "|")]) == "a-[bc]-|")
        #expect(Marbles.draw([]) == "")
    }

    @Test func aDiagramPlaysOnTheSchedulerFromEachSubscription() {
        let scheduler = TestScheduler()
        let signal = Signal<Int, Failure>.marbles("a-b-#", values: ["a": 1, "b": 2], failure: Failure(), scheduler: scheduler)
        let first = SignalRecorder(signal, scheduler: scheduler)
        scheduler.advance(by: .seconds(1))
        let second = SignalRecorder(signal, scheduler: scheduler)
        scheduler.run()
        #expect(first.events == [.value(1), .value(2), .failed(Failure())] && first.times == [.zero, .seconds(2), .seconds(4)])
        #expect(second.events == [.value(1), .value(2), .failed(Failure())] && second.times == [.seconds(1), .seconds(3), .seconds(5)])
    }

    @Test func aRecorderDrawsWhatItReceived() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder(Signal<String, Never>.marbles("a-b [cd]-|", scheduler: scheduler), scheduler: scheduler)
        scheduler.run()
        #expect(recorder.marbles() == "a-b[cd]-|")
        #expect(recorder.values == ["a", "b", "c", "d"])
    }

    @Test func framesOfAnyLengthAndAnOrigin() {
        let scheduler = TestScheduler(now: .seconds(10))
        let recorder = SignalRecorder(
            Signal<String, Never>.marbles("-a--|", scheduler: scheduler, frame: .milliseconds(250)),
            scheduler: scheduler
        )
        scheduler.run()
        #expect(recorder.marbles(frame: .milliseconds(250), from: .seconds(10)) == "-a--|")
    }

    @Test func cancellingTheSubscriptionCancelsWhatTheDiagramScheduled() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder(Signal<String, Never>.marbles("a--b|", scheduler: scheduler), scheduler: scheduler)
        scheduler.advance(by: .seconds(1))
        recorder.cancel()
        #expect(scheduler.pendingCount == 0)
        #expect(recorder.marbles() == "a")
    }

    /// Debounce as its specification reads: a value survives one quiet tick; the finish drops the
    /// value still waiting (Combine's behaviour).
    @Test func debounceAsAMarbleDiagram() {
        let scheduler = TestScheduler()
        let input = Signal<String, Never>.marbles("ab-c--d|", scheduler: scheduler)
        let recorder = SignalRecorder(input.debounce(for: .seconds(1), scheduler: scheduler), scheduler: scheduler)
        scheduler.run()
        #expect(recorder.marbles() == "--b-c--|")
    }
}
