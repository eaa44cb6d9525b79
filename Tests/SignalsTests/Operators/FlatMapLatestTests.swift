import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct FlatMapLatestTests {
    @Test func synchronousInnersAllGetThrough() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: 1...3).flatMapLatest { Signal(sequence: [$0, $0 * 10]) })
        #expect(recorder.events == [.value(1), .value(10), .value(2), .value(20), .value(3), .value(30), .finished])
    }

    @Test func switchesToTheNewestInnerAndCancelsThePrevious() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inners = [ManualSource<String, TestError>(), ManualSource<String, TestError>()]
        let recorder = SignalRecorder<String, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { inners[$0].signal })
        upstream.send(0)
        inners[0].send("a1")
        upstream.send(1)
        #expect(inners[0].teardowns == 1)
        inners[0].send("a2")
        inners[1].send("b1")
        #expect(recorder.values == ["a1", "b1"])
        _ = token
    }

    @Test func finishesWhenUpstreamAndCurrentInnerFinishInEitherOrder() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inner = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { _ in inner.signal })
        upstream.send(0)
        upstream.send(completion: .finished)
        #expect(!recorder.isFinished && recorder.failure == nil)
        inner.send(1)
        inner.finish()
        #expect(recorder.events == [.value(1), .finished])

        let second = SignalRecorder<Int, TestError>()
        let upstream2 = PassthroughSubject<Int, TestError>()
        let token2 = second.subscribe(to: upstream2.signal.flatMapLatest { _ in inner.signal })
        upstream2.send(0)
        inner.finish()
        #expect(!second.isFinished && second.failure == nil)
        upstream2.send(completion: .finished)
        #expect(second.events == [.finished])
        _ = (token, token2)
    }

    @Test func aCancelledInnersFinishDoesNotEndTheResult() throws {
        let upstream = PassthroughSubject<Int, TestError>()
        let inners = [ManualSource<Int, TestError>(), ManualSource<Int, TestError>()]
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { inners[$0].signal })
        upstream.send(0)
        let stale = try #require(inners[0].observer())
        upstream.send(1)
        upstream.send(completion: .finished)
        stale.finish()
        stale.fail(TestError())
        #expect(!recorder.isFinished && recorder.failure == nil)
        inners[1].finish()
        #expect(recorder.events == [.finished])
        _ = token
    }

    @Test func innerFailureCancelsUpstream() {
        let upstream = ManualSource<Int, TestError>()
        let inner = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { _ in inner.signal })
        upstream.send(0)
        inner.fail(TestError(code: 2))
        #expect(recorder.events == [.failed(TestError(code: 2))])
        #expect(upstream.teardowns == 1)
        upstream.send(1)
        #expect(inner.subscriptions == 1)
        _ = token
    }

    @Test func upstreamFailureCancelsTheInner() {
        let upstream = ManualSource<Int, TestError>()
        let inner = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { _ in inner.signal })
        upstream.send(0)
        upstream.fail(TestError(code: 3))
        #expect(recorder.events == [.failed(TestError(code: 3))])
        #expect(inner.teardowns == 1)
        inner.send(5)
        #expect(recorder.violations == 0)
        #expect(recorder.events.count == 1)
        _ = token
    }

    @Test func cancellationReachesUpstreamAndCurrentInner() {
        let upstream = ManualSource<Int, TestError>()
        let inner = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMapLatest { _ in inner.signal })
        upstream.send(0)
        token.cancel()
        #expect(upstream.teardowns == 1)
        #expect(inner.teardowns == 1)
        inner.send(1)
        upstream.send(1)
        #expect(recorder.events.isEmpty)
        #expect(inner.subscriptions == 1)
    }

    @Test func resubscribingRunsUpstreamAgain() {
        let runs = Counter()
        let signal = Signal<Int, TestError>(deferred: {
            runs.increment()
            return Signal(value: 1)
        }).flatMapLatest { Signal(value: $0 * 2) }
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.events == [.value(2), .finished])
        #expect(second.events == [.value(2), .finished])
        #expect(runs.count == 2)
    }

    @Test func neverFailingUpstreamWithFailingInner() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, Never>(value: 1).flatMapLatest { _ in Signal<Int, TestError>(error: TestError(code: 1)) })
        #expect(recorder.events == [.failed(TestError(code: 1))])
    }

    @Test func everythingIsReleasedAfterTheTerminalEvent() {
        weak var weakProbe: LifetimeProbe?
        let upstream = ManualSource<Int, TestError>()
        let token: CancellationToken
        do {
            let probe = LifetimeProbe()
            weakProbe = probe
            token = upstream.signal.flatMapLatest { value in
                _ = probe
                return Signal<Int, TestError>.never
            }.sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        }
        upstream.send(1)
        #expect(weakProbe != nil)
        upstream.fail(TestError())
        #expect(weakProbe == nil)
        _ = token
    }

    @Test func switchingWhileInnersSendFromOtherThreads() {
        for _ in 0..<20 {
            let upstream = PassthroughSubject<Int, TestError>()
            let inners = (0..<4).map { _ in PassthroughSubject<Int, TestError>() }
            let detector = OverlapDetector()
            let recorder = SignalRecorder<Int, TestError>()
            let token = upstream.signal.flatMapLatest { inners[$0].signal }.observe(Observer { event in
                detector.run { recorder.observer.send(event) }
            })
            upstream.send(0)
            DispatchQueue.concurrentPerform(iterations: 5) { index in
                if index == 4 {
                    for next in 1..<4 { upstream.send(next) }
                    upstream.send(completion: .finished)
                } else {
                    for value in 0..<200 { inners[index].send(index * 1000 + value) }
                }
            }
            // Whatever interleaving happened, the last inner is current: its values and its end
            // get through.
            inners[3].send(3_000_000)
            inners[3].send(completion: .finished)
            #expect(recorder.values.last == 3_000_000)
            #expect(recorder.events.filter(\.isTerminal).count == 1)
            #expect(recorder.isFinished)
            #expect(detector.count == 0)
            #expect(recorder.violations == 0)
            _ = token
        }
    }
}
