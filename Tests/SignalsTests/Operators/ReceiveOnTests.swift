import Dispatch
import Signals
import Testing
import SignalsTesting

@Suite struct ReceiveOnTests {
    @Test func deliversEveryEventOnTheSchedulerInOrder() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: source.signal.receive(on: scheduler))
        source.send(1)
        source.send(2)
        source.fail(TestError(code: 7))
        #expect(recorder.events.isEmpty)
        #expect(scheduler.pendingCount == 1)
        scheduler.advance()
        #expect(recorder.events == [.value(1), .value(2), .failed(TestError(code: 7))])
        #expect(scheduler.pendingCount == 0)
        _ = token
    }

    @Test func eventsArrivingAfterADeliveryAreScheduledAgain() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.receive(on: scheduler))
        source.send(1)
        scheduler.advance()
        source.send(2)
        #expect(recorder.values == [1])
        #expect(scheduler.pendingCount == 1)
        scheduler.advance()
        source.finish()
        scheduler.advance()
        #expect(recorder.events == [.value(1), .value(2), .finished])
        _ = token
    }

    @Test func nothingIsDeliveredAfterCancelEvenIfAlreadyScheduled() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.receive(on: scheduler))
        source.send(1)
        source.finish()
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance()
        #expect(recorder.events.isEmpty)
    }

    @Test func cancellingDuringDeliveryDropsTheRestOfTheQueue() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.receive(on: scheduler).prefix(2))
        for value in 1...5 { source.send(value) }
        scheduler.advance()
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(source.teardowns == 1)
        #expect(recorder.violations == 0)
        _ = token
    }

    @Test func releasingTheTokenReleasesTheSubscription() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = source.signal.receive(on: scheduler).sink { _ in _ = captured }
            source.send(1)
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
        #expect(source.teardowns == 1)
    }

    @Test func everySubscriptionHasItsOwnQueue() {
        let scheduler = TestScheduler()
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) }).receive(on: scheduler)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let tokens = [first.subscribe(to: signal), second.subscribe(to: signal)]
        #expect(scheduler.pendingCount == 2)
        scheduler.advance()
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
        _ = tokens
    }

    @Test func keepsOrderOnAConcurrentQueue() async throws {
        let queue = DispatchQueue(label: "receive-on-test", attributes: .concurrent)
        let values = try await within {
            try await Signal<Int, Never>(sequence: 0..<2_000).receive(on: queue).collect().firstValue()
        }
        #expect(values == Array(0..<2_000))
    }

    @Test func subscribeOnStartsTheUpstreamOnTheScheduler() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: source.signal.subscribe(on: scheduler))
        #expect(source.subscriptions == 0)
        scheduler.advance()
        #expect(source.subscriptions == 1)
        source.send(4)
        #expect(recorder.values == [4])
        token.cancel()
        #expect(source.teardowns == 1)
    }

    @Test func cancellingBeforeTheSchedulerRunsNeverSubscribes() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let token = source.signal.subscribe(on: scheduler).sink { _ in }
        #expect(scheduler.pendingCount == 1)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance()
        #expect(source.subscriptions == 0)
    }

    @Test func releasingTheTokenBeforeSubscribeOnRunsReleasesEverything() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        var probe: Probe? = Probe()
        let weakProbe = Weak(probe!)
        do {
            let captured = probe!
            _ = source.signal.subscribe(on: scheduler).sink { _ in _ = captured }
        }
        probe = nil
        #expect(weakProbe.object == nil)
        #expect(scheduler.pendingCount == 0)
        scheduler.advance()
        #expect(source.subscriptions == 0)
    }

    @Test func subscribeOnSubscribesAgainForEverySubscription() {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let signal = source.signal.subscribe(on: scheduler)
        let tokens = [signal.sink { _ in }, signal.sink { _ in }]
        scheduler.advance()
        #expect(source.subscriptions == 2)
        _ = tokens
    }
}
