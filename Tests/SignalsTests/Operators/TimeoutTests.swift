import Signals
import Testing
import SignalsTesting

@Suite struct TimeoutTests {
    @Test func finishesWhenNothingArrivesAndNoCustomError() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>(scheduler: scheduler)
        let token = recorder.subscribe(to: source.signal.timeout(.seconds(5), scheduler: scheduler))
        scheduler.advance(by: .milliseconds(4_999))
        #expect(recorder.events.isEmpty)
        #expect(source.isActive)
        scheduler.advance(by: .milliseconds(1))
        #expect(recorder.events == [.finished])
        #expect(recorder.times == [.seconds(5)])
        #expect(source.teardowns == 1)
        _ = token
    }

    @Test func failsWithTheCustomErrorAndCancelsTheUpstream() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(
            to: source.signal.timeout(.seconds(5), scheduler: scheduler, customError: { TestError(code: 408) })
        )
        scheduler.advance(by: .seconds(5))
        #expect(recorder.events == [.failed(TestError(code: 408))])
        #expect(source.teardowns == 1)
        source.send(1)
        source.finish()
        #expect(recorder.events == [.failed(TestError(code: 408))])
        #expect(recorder.violations == 0)
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func everyValueRestartsTheClockAndPassesThroughAtOnce() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>(scheduler: scheduler)
        let token = recorder.subscribe(
            to: source.signal.timeout(.seconds(5), scheduler: scheduler, customError: { TestError(code: 1) })
        )
        for value in 1...3 {
            scheduler.advance(by: .seconds(4))
            source.send(value)
            #expect(recorder.events.last == .value(value))
        }
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(by: .milliseconds(4_999))
        #expect(recorder.events == [.value(1), .value(2), .value(3)])
        scheduler.advance(by: .milliseconds(1))
        #expect(recorder.events.last == .failed(TestError(code: 1)))
        #expect(recorder.times.last == .seconds(17))
        _ = token
    }

    @Test func theUpstreamsTerminalEventStopsTheClock() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(
            to: source.signal.timeout(.seconds(5), scheduler: scheduler, customError: { TestError(code: 1) })
        )
        source.send(1)
        source.finish()
        #expect(recorder.events == [.value(1), .finished])
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(10))
        #expect(recorder.events == [.value(1), .finished])
        _ = token
    }

    @Test func theUpstreamsFailurePassesThrough() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(
            to: Signal(error: TestError(code: 2)).timeout(.seconds(5), scheduler: scheduler, customError: { TestError(code: 1) })
        )
        #expect(recorder.events == [.failed(TestError(code: 2))])
        #expect(scheduler.pendingCount == 0)
    }

    @Test func anyErrorSignalsFailWithTimeoutErrorByDefault() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>.never.timeout(.seconds(30), scheduler: scheduler))
        scheduler.advance(by: .seconds(30))
        #expect(recorder.failure as? TimeoutError == TimeoutError(interval: .seconds(30)))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        _ = token
    }

    @Test func anyErrorSignalsCanStillChooseToFinish() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(
            to: Signal<Int, any Error>.never.timeout(.seconds(1), scheduler: scheduler, customError: nil)
        )
        scheduler.advance(by: .seconds(1))
        #expect(recorder.isFinished)
        _ = token
    }

    @Test func timeoutErrorDescribesTheInterval() {
        #expect(TimeoutError(interval: .seconds(3)).description.contains("3"))
    }

    @Test func cancellingWhileWaitingCancelsTheTimerAndTheUpstream() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(
            to: source.signal.timeout(.seconds(5), scheduler: scheduler, customError: { TestError(code: 1) })
        )
        scheduler.advance(by: .seconds(2))
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
        source.send(1)
        scheduler.advance(by: .seconds(10))
        #expect(recorder.events.isEmpty)
    }

    @Test func releasingTheTokenReleasesTheSubscription() {
        let scheduler = TestScheduler()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = Signal<Int, TestError>.never
                .timeout(.seconds(5), scheduler: scheduler, customError: { _ = captured; return TestError() })
                .sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func theDownstreamIsReleasedAfterTheTimeout() {
        let scheduler = TestScheduler()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        let token: CancellationToken
        do {
            let captured = probe!
            token = Signal<Int, Never>.never.timeout(.seconds(1), scheduler: scheduler).sink { _ in _ = captured }
        }
        probe = nil
        #expect(weakProbe.object != nil)
        scheduler.advance(by: .seconds(1))
        #expect(weakProbe.object == nil)
        _ = token
    }

    @Test func everySubscriptionHasItsOwnClock() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let signal = source.signal.timeout(.seconds(5), scheduler: scheduler)
        let first = SignalRecorder<Int, Never>(scheduler: scheduler)
        let second = SignalRecorder<Int, Never>(scheduler: scheduler)
        let tokens = [first.subscribe(to: signal)]
        scheduler.advance(by: .seconds(3))
        let more = [second.subscribe(to: signal)]
        scheduler.advance(by: .seconds(10))
        #expect(first.times == [.seconds(5)])
        #expect(second.times == [.seconds(8)])
        #expect(source.subscriptions == 2)
        #expect(source.teardowns == 2)
        _ = (tokens, more)
    }

    @Test func aSynchronousUpstreamNeverTimesOut() {
        let scheduler = TestScheduler()
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2]).timeout(.seconds(1), scheduler: scheduler))
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(scheduler.pendingCount == 0)
    }
}
