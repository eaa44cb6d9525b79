import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

extension Atomic where Value == Int {
    /// Raises the stored value to `candidate` if it is larger.
    func raise(to candidate: Int) {
        var current = load(ordering: .relaxed)
        while candidate > current {
            let (exchanged, original) = compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

@Suite struct FlatMapTests {
    @Test func releasingTheTokenCancels() {
        let upstream = ManualSource<Int, Never>()
        let inner = ManualSource<Int, Never>()
        do {
            let token = upstream.signal.flatMap { _ in inner.signal }.sink { _ in }
            upstream.send(0)
            _ = token
        }
        #expect(upstream.teardowns == 1)
        #expect(inner.teardowns == 1)
    }

    @Test func singleValueThroughSingleValue() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(value: 1).flatMap { Signal(value: $0 + 1) })
        #expect(recorder.events == [.value(2), .finished])
    }

    @Test func synchronousInnersKeepUpstreamOrder() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: 1...3).flatMap { Signal(sequence: [$0, $0 * 10]) })
        #expect(recorder.events == [.value(1), .value(10), .value(2), .value(20), .value(3), .value(30), .finished])
    }

    @Test func emptyUpstreamFinishes() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>.empty.flatMap { Signal(value: $0) })
        #expect(recorder.events == [.finished])
    }

    @Test func valuesOfConcurrentInnersInterleaveAsTheyArrive() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inners = [ManualSource<String, TestError>(), ManualSource<String, TestError>()]
        let recorder = SignalRecorder<String, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        inners[1].send("b1")
        inners[0].send("a1")
        inners[1].send("b2")
        #expect(recorder.values == ["b1", "a1", "b2"])
        _ = token
    }

    @Test func finishesOnlyAfterUpstreamAndEveryInner() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inners = [ManualSource<Int, TestError>(), ManualSource<Int, TestError>()]
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        upstream.send(completion: .finished)
        inners[0].finish()
        #expect(!recorder.isFinished && recorder.failure == nil)
        inners[1].send(5)
        inners[1].finish()
        #expect(recorder.events == [.value(5), .finished])
        _ = token
    }

    @Test func finishesWhenUpstreamFinishesLast() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inner = ManualSource<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap { _ in inner.signal })
        upstream.send(0)
        inner.finish()
        #expect(!recorder.isFinished && recorder.failure == nil)
        upstream.send(completion: .finished)
        #expect(recorder.events == [.finished])
        _ = token
    }

    @Test func innerFailureCancelsUpstreamAndOtherInnersAndFailsOnce() {
        let upstream = ManualSource<Int, TestError>()
        let inners = [ManualSource<Int, TestError>(), ManualSource<Int, TestError>()]
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        inners[0].fail(TestError(code: 1))
        #expect(recorder.events == [.failed(TestError(code: 1))])
        #expect(upstream.teardowns == 1)
        #expect(inners[1].teardowns == 1)
        // Nothing gets through afterwards, from anyone.
        inners[1].send(9)
        inners[1].fail(TestError(code: 2))
        upstream.send(1)
        upstream.finish()
        #expect(recorder.events == [.failed(TestError(code: 1))])
        #expect(recorder.violations == 0)
        _ = token
    }

    @Test func upstreamFailureCancelsEveryInner() {
        let upstream = ManualSource<Int, TestError>()
        let inners = [ManualSource<Int, TestError>(), ManualSource<Int, TestError>()]
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        upstream.fail(TestError(code: 4))
        #expect(recorder.events == [.failed(TestError(code: 4))])
        #expect(inners.map(\.teardowns) == [1, 1])
        _ = token
    }

    @Test func cancellationReachesUpstreamAndEveryInner() {
        let upstream = ManualSource<Int, TestError>()
        let inners = (0..<3).map { _ in ManualSource<Int, TestError>() }
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap(maxConcurrent: 2) { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        upstream.send(2)   // waits for a slot
        inners[0].send(7)
        token.cancel()
        #expect(upstream.teardowns == 1)
        #expect(inners[0].teardowns == 1)
        #expect(inners[1].teardowns == 1)
        #expect(inners[2].subscriptions == 0)
        inners[1].send(8)
        inners[1].finish()
        #expect(recorder.events == [.value(7)])
        #expect(inners[2].subscriptions == 0)
    }

    @Test func maxConcurrentLimitsSubscriptionsAndKeepsOrder() {
        let upstream = PassthroughSubject<Int, TestError>()
        let inners = (0..<5).map { _ in ManualSource<Int, TestError>() }
        let transformed = Locked<[Int]>([])
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: upstream.signal.flatMap(maxConcurrent: 2) { index in
            transformed.withLock { $0.append(index) }
            return inners[index].signal
        })
        for index in 0..<5 { upstream.send(index) }
        upstream.send(completion: .finished)
        #expect(inners.map(\.subscriptions) == [1, 1, 0, 0, 0])
        #expect(transformed.withLock { $0 } == [0, 1])
        inners[1].finish()
        #expect(inners.map(\.subscriptions) == [1, 1, 1, 0, 0])
        inners[0].send(10)
        inners[0].finish()
        inners[2].finish()
        #expect(inners.map(\.subscriptions) == [1, 1, 1, 1, 1])
        #expect(transformed.withLock { $0 } == [0, 1, 2, 3, 4])
        inners[3].finish()
        #expect(!recorder.isFinished && recorder.failure == nil)
        inners[4].send(40)
        inners[4].finish()
        #expect(recorder.events == [.value(10), .value(40), .finished])
        _ = token
    }

    @Test func maxConcurrentOneConcatenatesInOrder() {
        let recorder = SignalRecorder<Int, Never>()
        let upstream = PassthroughSubject<Int, Never>()
        let inners = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
        let token = recorder.subscribe(to: upstream.signal.flatMap(maxConcurrent: 1) { inners[$0].signal })
        upstream.send(0)
        upstream.send(1)
        upstream.send(2)
        inners[1].send(99)   // not subscribed yet: lost, as a hot source's values are
        inners[0].send(1)
        inners[0].send(completion: .finished)
        inners[1].send(2)
        inners[1].send(completion: .finished)
        inners[2].send(3)
        #expect(recorder.values == [1, 2, 3])
        _ = token
    }

    @Test func zeroLimitCountsAsOne() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: 1...3).flatMap(maxConcurrent: 0) { Signal(value: $0) })
        #expect(recorder.events == [.value(1), .value(2), .value(3), .finished])
    }

    @Test func resubscribingRunsUpstreamAndInnersAgain() {
        let upstreamRuns = Counter()
        let innerRuns = Counter()
        let signal = Signal<Int, TestError>(deferred: {
            upstreamRuns.increment()
            return Signal(sequence: [1, 2])
        }).flatMap { value in
            Signal(deferred: {
                innerRuns.increment()
                return Signal(value: value)
            })
        }
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.events == [.value(1), .value(2), .finished])
        #expect(second.events == first.events)
        #expect(upstreamRuns.count == 2)
        #expect(innerRuns.count == 4)
    }

    @Test func manyWaitingSynchronousInnersDoNotGrowTheStack() {
        let upstream = PassthroughSubject<Int, Never>()
        let gate = PassthroughSubject<Int, Never>()
        let count = 50_000
        let received = Counter()
        let completed = Counter()
        let token = upstream.signal.flatMap(maxConcurrent: 1) { value in
            value == 0 ? gate.signal.prefix(1) : Signal(value: value)
        }.observe(Observer { event in
            if event.isTerminal { completed.increment() } else { received.increment() }
        })
        for value in 0..<count { upstream.send(value) }
        upstream.send(completion: .finished)
        gate.send(0)
        #expect(received.count == count)
        #expect(completed.count == 1)
        _ = token
    }

    @Test func aFinishedInnerIsReleasedWhileTheUpstreamGoesOn() {
        let upstream = PassthroughSubject<Int, Never>()
        weak var weakProbe: LifetimeProbe?
        let probeHolder = Locked<LifetimeProbe?>(LifetimeProbe())
        weakProbe = probeHolder.withLock { $0 }
        let token = upstream.signal.flatMap { value -> Signal<Int, Never> in
            let probe = probeHolder.withLock { probe in
                defer { probe = nil }
                return probe
            }
            // `retry` registers state holding its upstream (and the probe) in the inner's token.
            return Signal<Int, Never>(deferred: {
                _ = probe
                return Signal(value: value)
            }).retry(1)
        }.sink { _ in }
        upstream.send(1)
        #expect(weakProbe == nil)
        _ = token
    }

    @Test func everythingIsReleasedAfterTheTerminalEvent() {
        weak var weakProbe: LifetimeProbe?
        let upstream = ManualSource<Int, TestError>()
        let token: CancellationToken
        do {
            let probe = LifetimeProbe()
            weakProbe = probe
            token = upstream.signal.flatMap { value in
                Signal { observer in
                    observer.send(value)
                    return { _ = probe }
                }
            }.sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        }
        upstream.send(1)
        #expect(weakProbe != nil)
        upstream.fail(TestError())
        #expect(weakProbe == nil)
        _ = token
    }

    @Test func neverFailingUpstreamWithFailingInners() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, Never>(sequence: 1...3).flatMap { value -> Signal<Int, TestError> in
            value == 2 ? Signal(error: TestError(code: 2)) : Signal(value: value)
        })
        #expect(recorder.events == [.value(1), .failed(TestError(code: 2))])
    }

    @Test func neverFailingOnBothSides() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal<Int, Never>(sequence: 1...2).flatMap { Signal(value: $0 * 2) })
        #expect(recorder.events == [.value(2), .value(4), .finished])
    }

    @Test func innersCompletingOnManyThreadsRespectTheLimit() {
        let limit = 3
        let total = 400
        let pending = Locked<[(Int, Observer<Int, TestError>)]>([])
        let active = Atomic<Int>(0)
        let maxActive = Atomic<Int>(0)
        let completedInners = Atomic<Int>(0)
        let detector = OverlapDetector()
        let values = Locked<[Int]>([])
        let terminals = Counter()
        let upstream = PassthroughSubject<Int, TestError>()
        let token = upstream.signal.flatMap(maxConcurrent: limit) { value in
            Signal<Int, TestError> { observer in
                let now = active.add(1, ordering: .acquiringAndReleasing).newValue
                maxActive.raise(to: now)
                pending.withLock { $0.append((value, observer)) }
                return nil
            }
        }.observe(Observer { event in
            detector.run {
                switch event {
                case .value(let value): values.withLock { $0.append(value) }
                case .finished, .failed: terminals.increment()
                }
            }
        })
        for value in 0..<total { upstream.send(value) }
        upstream.send(completion: .finished)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while completedInners.load(ordering: .acquiring) < total {
                let next = pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let (value, observer) = next else { continue }
                observer.send(value)
                active.subtract(1, ordering: .acquiringAndReleasing)
                completedInners.add(1, ordering: .acquiringAndReleasing)
                observer.finish()
            }
        }
        #expect(maxActive.load(ordering: .relaxed) <= limit)
        #expect(values.withLock { $0.sorted() } == Array(0..<total))
        #expect(terminals.count == 1)
        #expect(detector.count == 0)
        _ = token
    }

    @Test func concurrentInnerFailuresFailExactlyOnce() {
        for _ in 0..<50 {
            let inners = (0..<4).map { _ in ManualSource<Int, TestError>() }
            let recorder = SignalRecorder<Int, TestError>()
            let token = recorder.subscribe(to: Signal(sequence: 0..<4).flatMap { inners[$0].signal })
            // (The upstream's failure type is inferred from the inners: no ambiguity.)
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                inners[index].send(index)
                inners[index].fail(TestError(code: index))
                inners[index].send(index + 10)
            }
            #expect(recorder.events.filter(\.isTerminal).count == 1)
            #expect(recorder.violations == 0)
            #expect(inners.allSatisfy { $0.teardowns == 1 })
            _ = token
        }
    }
}
