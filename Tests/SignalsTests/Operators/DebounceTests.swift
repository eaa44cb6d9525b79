import Signals
import Testing
import SignalsTesting

@Suite struct DebounceTests {
    /// The example from Combine's documentation: values arriving faster than the interval are
    /// dropped; the survivor of a quiet interval is sent when the interval ends.
    @Test func sendsOnlyValuesFollowedByAQuietInterval() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.debounce(for: .milliseconds(500), scheduler: scheduler))
        let bounces: [(Int, Duration)] = [
            (0, .zero), (1, .milliseconds(250)), (2, .milliseconds(1_000)),
            (3, .milliseconds(1_250)), (4, .milliseconds(1_500)), (5, .milliseconds(2_000)),
        ]
        for (value, time) in bounces {
            scheduler.advance(by: time - scheduler.now)
            source.send(value)
        }
        scheduler.advance(by: .seconds(5))
        #expect(recorder.events == [.value(1), .value(4), .value(5)])
        #expect(recorder.times == [.milliseconds(750), .milliseconds(2_000), .milliseconds(2_500)])
        _ = token
    }

    @Test func aNewValueReplacesTheWaitingOneAndRestartsTheWait() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.debounce(for: .seconds(1), scheduler: scheduler))
        for value in 1...5 {
            source.send(value)
            #expect(scheduler.pendingCount == 1)
            scheduler.advance(by: .milliseconds(900))
        }
        #expect(recorder.events.isEmpty)
        scheduler.advance(by: .milliseconds(100))
        #expect(recorder.events == [.value(5)])
        #expect(recorder.times == [.milliseconds(4_600)])
        _ = token
    }

    @Test func finishingDropsTheWaitingValueLikeCombine() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.debounce(for: .seconds(1), scheduler: scheduler))
        source.send(1)
        source.finish()
        #expect(recorder.events.isEmpty)
        #expect(scheduler.pendingCount == 1)
        scheduler.advance()
        #expect(recorder.events == [.finished])
        scheduler.advance(by: .seconds(5))
        #expect(recorder.events == [.finished])
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func aValueThatSurvivedIsFollowedByTheFinish() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.debounce(for: .seconds(1), scheduler: scheduler))
        source.send(1)
        scheduler.advance(by: .seconds(1))
        source.finish()
        scheduler.advance()
        #expect(recorder.events == [.value(1), .finished])
        _ = token
    }

    @Test func failuresAreDeliveredOnTheScheduler() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: source.signal.debounce(for: .seconds(1), scheduler: scheduler))
        source.send(1)
        source.fail(TestError(code: 3))
        #expect(recorder.events.isEmpty)
        scheduler.advance()
        #expect(recorder.events == [.failed(TestError(code: 3))])
        _ = token
    }

    @Test func cancellingWhileWaitingCancelsTheTimerAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.debounce(for: .seconds(1), scheduler: scheduler))
        source.send(1)
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
        source.send(2)
        scheduler.advance(by: .seconds(5))
        #expect(recorder.events.isEmpty)
    }

    @Test func cancellingWhileTheFinishIsScheduledDropsIt() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal(value: 1).debounce(for: .seconds(1), scheduler: scheduler))
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(5))
        #expect(recorder.events.isEmpty)
    }

    @Test func releasingTheTokenReleasesTheSubscription() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = source.signal.debounce(for: .seconds(1), scheduler: scheduler).sink { _ in _ = captured }
            source.send(1)
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
    }

    @Test func everySubscriptionDebouncesOnItsOwn() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let signal = source.signal.debounce(for: .seconds(1), scheduler: scheduler)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let tokens = [first.subscribe(to: signal), second.subscribe(to: signal)]
        source.send(2)
        scheduler.advance(by: .seconds(1))
        #expect(first.events.isEmpty)
        #expect(second.values == [2])
        #expect(source.subscriptions == 2)
        _ = tokens
    }
}
