import Signals
import Testing
import SignalsTesting

@Suite struct TimerTests {
    @Test func timerSendsOneValueThenFinishesAfterTheDelay() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Void, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: Signal.timer(after: .seconds(30), scheduler: scheduler))
        scheduler.advance(by: .seconds(29))
        #expect(recorder.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(recorder.events.count == 2)
        #expect(recorder.events.first?.value != nil)
        #expect(recorder.events.last?.isTerminal == true)
        #expect(recorder.times == [.seconds(30), .seconds(30)])
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func cancellingTheTimerWhileWaitingCancelsTheScheduledAction() {
        let scheduler = TestScheduler()
        let fired = Counter()
        let token = Signal.timer(after: .seconds(5), scheduler: scheduler).sink { fired.increment() }
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(10))
        #expect(fired.count == 0)
    }

    @Test func releasingTheTimersTokenReleasesTheWait() {
        let scheduler = TestScheduler()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = Signal.timer(after: .seconds(5), scheduler: scheduler).sink { _ = captured }
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func everySubscriptionWaitsFromItsOwnStart() {
        let scheduler = TestScheduler()
        let timer = Signal.timer(after: .seconds(5), scheduler: scheduler)
        let first = SignalRecorder<Void, Never>(scheduler: scheduler)
        let second = SignalRecorder<Void, Never>(scheduler: scheduler)
        let tokens = [first.subscribe(to: timer)]
        scheduler.advance(by: .seconds(2))
        let more = [second.subscribe(to: timer)]
        scheduler.advance(by: .seconds(10))
        #expect(first.times == [.seconds(5), .seconds(5)])
        #expect(second.times == [.seconds(7), .seconds(7)])
        _ = (tokens, more)
    }

    @Test func aZeroTimerFiresWhenTheSchedulerRuns() {
        let scheduler = TestScheduler()
        let fired = Counter()
        let token = Signal.timer(after: .zero, scheduler: scheduler).sink { fired.increment() }
        #expect(fired.count == 0)
        scheduler.advance()
        #expect(fired.count == 1)
        _ = token
    }

    @Test func timerComposesWithFailingSignals() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Void, TestError>()
        let token = recorder.subscribe(
            to: Signal.timer(after: .seconds(1), scheduler: scheduler).setFailureType(to: TestError.self)
        )
        scheduler.advance(by: .seconds(1))
        #expect(recorder.isFinished)
        _ = token
    }
}
