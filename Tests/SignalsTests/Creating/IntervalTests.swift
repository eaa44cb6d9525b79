import Signals
import Testing
import SignalsTesting

@Suite
struct IntervalTests {
    @Test func intervalTicksEveryPeriodAndNeverFinishes() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: Signal.interval(.seconds(1), scheduler: scheduler))
        scheduler.advance(by: .milliseconds(999))
        #expect(recorder.events.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(recorder.events == [.value(0)])
        scheduler.advance(by: .seconds(9))
        #expect(recorder.events == (0..<10).map { .value($0) })
        #expect(recorder.times == (1...10).map { .seconds($0) })
        #expect(scheduler.pendingCount == 1)
        _ = token
    }

    @Test func intervalTicksAreMeasuredFromTheSubscription() {
        let scheduler = TestScheduler(now: .seconds(100))
        scheduler.advance(by: .milliseconds(500))
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: Signal.interval(.seconds(2), scheduler: scheduler))
        scheduler.advance(by: .seconds(5))
        #expect(recorder.times == [.milliseconds(102_500), .milliseconds(104_500)])
        _ = token
    }

    @Test func cancellingTheIntervalCancelsTheNextTick() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal.interval(.seconds(1), scheduler: scheduler))
        scheduler.advance(by: .milliseconds(2_500))
        #expect(recorder.values == [0, 1])
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(10))
        #expect(recorder.values == [0, 1])
        #expect(!recorder.isFinished && recorder.failure == nil)
    }

    @Test func cancellingFromInsideATickStopsTheInterval() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal.interval(.seconds(1), scheduler: scheduler).prefix(3))
        scheduler.advance(by: .seconds(10))
        #expect(recorder.events == [.value(0), .value(1), .value(2), .finished])
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func releasingTheIntervalsTokenReleasesIt() {
        let scheduler = TestScheduler()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = Signal.interval(.seconds(1), scheduler: scheduler).sink { _ in _ = captured }
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func everyIntervalSubscriptionCountsFromZero() {
        let scheduler = TestScheduler()
        let ticks = Signal.interval(.seconds(1), scheduler: scheduler)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let tokens = [first.subscribe(to: ticks)]
        scheduler.advance(by: .seconds(2))
        let more = [second.subscribe(to: ticks)]
        scheduler.advance(by: .seconds(2))
        #expect(first.values == [0, 1, 2, 3])
        #expect(second.values == [0, 1])
        _ = (tokens, more)
    }

    @Test func anImmediateSchedulerTicksWithoutGrowingTheStack() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal.interval(.seconds(1), scheduler: ImmediateScheduler()).prefix(50_000))
        #expect(recorder.values.count == 50_000)
        #expect(recorder.values.last == 49_999)
        #expect(recorder.isFinished)
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aNonPositivePeriodFinishesAtOnce(period: Duration) {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal.interval(period, scheduler: scheduler))
        #expect(recorder.events == [.finished])
        #expect(scheduler.pendingCount == 0)
    }
}
