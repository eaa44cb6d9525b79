import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct ShareTests {
    @Test func concurrentSubscribersShareOneUpstreamSubscription() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: shared)
        source.send(1)
        let t2 = second.subscribe(to: shared)
        source.send(2)
        source.finish()
        #expect(source.subscriptions == 1)
        #expect(first.events == [.value(1), .value(2), .finished])
        #expect(second.events == [.value(2), .finished])
        _ = (t1, t2)
    }

    @Test func aFailureReachesEverySubscriber() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: shared)
        let t2 = second.subscribe(to: shared)
        source.fail(TestError(code: 3))
        #expect(first.events == [.failed(TestError(code: 3))])
        #expect(second.events == [.failed(TestError(code: 3))])
        _ = (t1, t2)
    }

    @Test func theLastSubscriberToCancelCancelsTheUpstream() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: shared)
        let t2 = second.subscribe(to: shared)
        t1.cancel()
        #expect(source.teardowns == 0)
        source.send(1)
        #expect(first.events.isEmpty)
        #expect(second.values == [1])
        t2.cancel()
        #expect(source.teardowns == 1)
    }

    @Test func aNewSubscriberAfterCancellationSubscribesAgain() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let t1 = shared.sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        t1.cancel()
        let recorder = SignalRecorder<Int, TestError>()
        let t2 = recorder.subscribe(to: shared)
        #expect(source.subscriptions == 2)
        source.send(5)
        #expect(recorder.values == [5])
        _ = t2
    }

    @Test func aNewSubscriberAfterCompletionSubscribesAgain() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let first = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: shared)
        source.finish()
        let second = SignalRecorder<Int, TestError>()
        let t2 = second.subscribe(to: shared)
        #expect(source.subscriptions == 2)
        source.send(9)
        #expect(second.values == [9])
        #expect(first.events == [.finished])
        _ = (t1, t2)
    }

    @Test func resubscribingFromTheCompletionHandlerStartsANewUpstream() {
        let source = ManualSource<Int, TestError>()
        let shared = source.signal.share()
        let again = SignalRecorder<Int, TestError>()
        let againToken = Locked<CancellationToken?>(nil)
        let t1 = shared.sink(receiveCompletion: { _ in
            againToken.withLock { $0 = again.subscribe(to: shared) }
        }, receiveValue: { _ in })
        source.finish(0)
        #expect(source.subscriptions == 2)
        source.send(4, to: 1)
        #expect(again.values == [4])
        _ = t1
    }

    @Test func synchronousUpstreamRunsForEachSubscriber() {
        let runs = Counter()
        let shared = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) }).share()
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: shared)
        second.subscribe(to: shared)
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
    }

    @Test func releasingEveryTokenCancelsTheUpstreamAndReleasesTheSubscribers() {
        let source = ManualSource<Int, Never>()
        let shared = source.signal.share()
        weak var weakProbe: LifetimeProbe?
        do {
            let probe = LifetimeProbe()
            weakProbe = probe
            let t1 = shared.sink { _ in _ = probe }
            let t2 = shared.sink { _ in }
            _ = (t1, t2)
        }
        #expect(source.teardowns == 1)
        #expect(weakProbe == nil)
    }

    @Test func aCancelledTokenDoesNotSubscribe() {
        let source = ManualSource<Int, Never>()
        let shared = source.signal.share()
        let token = CancellationToken()
        token.cancel()
        shared.observe(Observer { _ in }, in: token)
        #expect(source.subscriptions == 0)
    }

    @Test func subscribersComingAndGoingOnManyThreads() {
        let source = ManualSource<Int, Never>()
        let shared = source.signal.share()
        let anchor = SignalRecorder<Int, Never>()
        let anchorToken = anchor.subscribe(to: shared)
        let violations = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            if index == 0 {
                for value in 0..<3_000 { source.send(value) }
            } else {
                for _ in 0..<300 {
                    let last = Locked(-1)
                    let token = shared.sink { value in
                        let ordered = last.withLock { last -> Bool in
                            defer { last = value }
                            return value > last
                        }
                        if !ordered { violations.add(1, ordering: .relaxed) }
                    }
                    token.cancel()
                }
            }
        }
        #expect(violations.load(ordering: .relaxed) == 0)
        #expect(anchor.values == Array(0..<3_000))
        #expect(source.subscriptions == 1)
        anchorToken.cancel()
        #expect(source.teardowns == 1)
    }
}
