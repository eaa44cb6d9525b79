import Signals
import Testing
import SignalsTesting

@Suite struct ThrottleTests {
    private func run(latest: Bool) -> SignalRecorder<String, Never> {
        let scheduler = TestScheduler()
        let source = ManualSource<String, Never>()
        let recorder = SignalRecorder<String, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: latest))
        let sends: [(String, Duration)] = [
            ("a", .zero), ("b", .milliseconds(100)), ("c", .milliseconds(500)), ("d", .milliseconds(1_200)),
        ]
        for (value, time) in sends {
            scheduler.advance(by: time - scheduler.now)
            source.send(value)
        }
        scheduler.advance(by: .seconds(10))
        _ = token
        return recorder
    }

    @Test func firstOfEachWindowWhenNotLatest() {
        let recorder = run(latest: false)
        #expect(recorder.events == [.value("a"), .value("b"), .value("d")])
        #expect(recorder.times == [.zero, .seconds(1), .seconds(2)])
    }

    @Test func mostRecentOfEachWindowWhenLatest() {
        let recorder = run(latest: true)
        #expect(recorder.events == [.value("a"), .value("c"), .value("d")])
        #expect(recorder.times == [.zero, .seconds(1), .seconds(2)])
    }

    @Test func theFirstValueIsSentAsSoonAsTheSchedulerRuns() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: true))
        source.send(1)
        #expect(recorder.events.isEmpty)
        scheduler.advance()
        #expect(recorder.values == [1])
        _ = token
    }

    @Test func valuesFartherApartThanTheIntervalAllPass() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: false))
        for value in 1...3 {
            source.send(value)
            scheduler.advance(by: .seconds(2))
        }
        #expect(recorder.events == [.value(1), .value(2), .value(3)])
        #expect(recorder.times == [.zero, .seconds(2), .seconds(4)])
        _ = token
    }

    @Test func theFinishFollowsTheWaitingValueWithoutDroppingIt() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: true))
        source.send(1)
        scheduler.advance(by: .milliseconds(100))
        source.send(2)
        source.finish()
        scheduler.advance(by: .milliseconds(800))
        #expect(recorder.events == [.value(1)])
        scheduler.advance(by: .milliseconds(100))
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(recorder.times == [.zero, .seconds(1), .seconds(1)])
        _ = token
    }

    @Test func aFailureWithNothingWaitingIsDeliveredOnTheScheduler() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: false))
        source.send(1)
        scheduler.advance()
        source.fail(TestError(code: 5))
        #expect(recorder.events == [.value(1)])
        scheduler.advance()
        #expect(recorder.events == [.value(1), .failed(TestError(code: 5))])
        _ = token
    }

    @Test func cancellingWhileAValueWaitsCancelsTheEmissionAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: true))
        source.send(1)
        scheduler.advance()
        source.send(2)
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
        source.send(3)
        scheduler.advance(by: .seconds(5))
        #expect(recorder.values == [1])
    }

    @Test func releasingTheTokenReleasesTheSubscription() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = source.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: false).sink { _ in _ = captured }
            source.send(1)
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func everySubscriptionThrottlesOnItsOwn() {
        let scheduler = TestScheduler()
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
            .throttle(for: .seconds(1), scheduler: scheduler, latest: false)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let tokens = [first.subscribe(to: signal), second.subscribe(to: signal)]
        scheduler.advance()
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
        _ = tokens
    }
}
