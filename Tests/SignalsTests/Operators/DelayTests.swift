import Signals
import Testing
import SignalsTesting

@Suite struct DelayTests {
    @Test func delaysEveryValueAndTheFinishByTheInterval() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.delay(for: .seconds(5), scheduler: scheduler))
        source.send(1)
        scheduler.advance(by: .seconds(1))
        source.send(2)
        scheduler.advance(by: .milliseconds(3_999))
        #expect(recorder.events.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(recorder.events == [.value(1)])
        scheduler.advance(by: .seconds(1))
        #expect(recorder.events == [.value(1), .value(2)])
        source.finish()
        scheduler.advance(by: .seconds(4))
        #expect(recorder.events.count == 2)
        scheduler.advance(by: .seconds(1))
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(recorder.times == [.seconds(5), .seconds(6), .seconds(11)])
        _ = token
    }

    @Test func failuresAreDelayedAndNeverOvertakeValues() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.delay(for: .seconds(2), scheduler: scheduler))
        source.send(1)
        source.fail(TestError(code: 9))
        scheduler.advance(by: .seconds(1))
        #expect(recorder.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(recorder.events == [.value(1), .failed(TestError(code: 9))])
        #expect(recorder.times == [.seconds(2), .seconds(2)])
        _ = token
    }

    @Test func eventsDueAtTheSameInstantKeepTheirOrder() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal(sequence: 1...50).delay(for: .seconds(1), scheduler: scheduler))
        #expect(scheduler.pendingCount == 51)
        scheduler.advance(by: .seconds(1))
        #expect(recorder.values == Array(1...50))
        #expect(recorder.isFinished)
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func zeroDelayStillDeliversOnTheScheduler() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal(value: 3).delay(for: .zero, scheduler: scheduler))
        #expect(recorder.events.isEmpty)
        scheduler.advance()
        #expect(recorder.events == [.value(3), .finished])
        _ = token
    }

    @Test func cancellingWhileWaitingCancelsTheScheduledEventsAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.delay(for: .seconds(5), scheduler: scheduler))
        source.send(1)
        source.send(2)
        #expect(scheduler.pendingCount == 2)
        scheduler.advance(by: .seconds(3))
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
        source.send(3)
        source.finish()
        scheduler.advance(by: .seconds(60))
        #expect(recorder.events.isEmpty)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func releasingTheTokenCancelsAndReleasesTheSubscription() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            let signal = Signal<Int, Never> { observer in
                observer.send(1)
                return { _ = captured }
            }
            _ = recorder.subscribe(to: signal.delay(for: .seconds(5), scheduler: scheduler))
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(10))
        #expect(recorder.events.isEmpty)
    }

    @Test func theDownstreamIsReleasedAfterTheDelayedTerminalEvent() {
        let scheduler = TestScheduler()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        let token: CancellationToken
        do {
            let captured = probe!
            token = Signal(value: 1).delay(for: .seconds(1), scheduler: scheduler).sink { _ in _ = captured }
        }
        probe = nil
        #expect(weakProbe.object != nil)
        scheduler.advance(by: .seconds(1))
        #expect(weakProbe.object == nil)
        #expect(!token.isCancelled)
    }

    @Test func everySubscriptionIsDelayedOnItsOwn() {
        let scheduler = TestScheduler()
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
            .delay(for: .seconds(2), scheduler: scheduler)
        let first = SignalRecorder<Int, Never>(scheduler: scheduler)
        let second = SignalRecorder<Int, Never>(scheduler: scheduler)
        let tokens = [first.subscribe(to: signal)]
        scheduler.advance(by: .seconds(1))
        let more = [second.subscribe(to: signal)]
        scheduler.advance(by: .seconds(5))
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
        #expect(first.times == [.seconds(2), .seconds(2)])
        #expect(second.times == [.seconds(3), .seconds(3)])
        _ = (tokens, more)
    }

    @Test func anImmediateSchedulerDeliversAtOnce() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2]).delay(for: .seconds(30), scheduler: ImmediateScheduler()))
        #expect(recorder.events == [.value(1), .value(2), .finished])
    }
}
