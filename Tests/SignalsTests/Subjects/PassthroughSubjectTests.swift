import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

/// An object whose lifetime tests follow with a weak reference.
final class LifetimeProbe: Sendable {
    init() {}
}

/// Detects overlapping deliveries: `enter` returns false if another delivery is in progress.
final class OverlapDetector: Sendable {
    private let inside = Atomic<Bool>(false)
    private let overlaps = Atomic<Int>(0)
    init() {}

    func run(_ body: () -> Void) {
        if inside.exchange(true, ordering: .acquiringAndReleasing) {
            overlaps.add(1, ordering: .relaxed)
        }
        body()
        inside.store(false, ordering: .releasing)
    }

    var count: Int { overlaps.load(ordering: .relaxed) }
}

@Suite struct PassthroughSubjectTests {
    @Test func broadcastsToEveryCurrentSubscriber() {
        let subject = PassthroughSubject<Int, TestError>()
        let first = SignalRecorder<Int, TestError>()
        let second = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: subject.signal)
        subject.send(1)
        let t2 = second.subscribe(to: subject.signal)
        subject.send(2)
        subject.send(completion: .finished)
        #expect(first.events == [.value(1), .value(2), .finished])
        #expect(second.events == [.value(2), .finished])
        _ = (t1, t2)
    }

    @Test func nothingIsAcceptedAfterCompletion() {
        let subject = PassthroughSubject<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: subject.signal)
        subject.send(completion: .failure(TestError(code: 1)))
        subject.send(1)
        subject.send(completion: .finished)
        subject.send(completion: .failure(TestError(code: 2)))
        #expect(recorder.events == [.failed(TestError(code: 1))])
        #expect(recorder.violations == 0)
        _ = token
    }

    @Test func lateSubscriberReceivesTheCompletionAtOnce() {
        let subject = PassthroughSubject<Int, TestError>()
        subject.send(1)
        subject.send(completion: .failure(TestError(code: 3)))
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: subject.signal)
        #expect(recorder.events == [.failed(TestError(code: 3))])
        _ = token
    }

    @Test func cancellingRemovesTheSubscriberAndReleasesIt() {
        let subject = PassthroughSubject<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        weak var weakProbe: LifetimeProbe?
        let token: CancellationToken
        do {
            let probe = LifetimeProbe()
            weakProbe = probe
            let observer = recorder.observer
            token = subject.signal.observe(Observer { event in
                _ = probe
                observer.send(event)
            })
        }
        subject.send(1)
        #expect(weakProbe != nil)
        token.cancel()
        subject.send(2)
        #expect(recorder.values == [1])
        #expect(weakProbe == nil)
    }

    @Test func releasingTheTokenUnsubscribes() {
        let subject = PassthroughSubject<Int, Never>()
        let received = Counter()
        do {
            let token = subject.signal.sink { _ in received.increment() }
            subject.send(1)
            _ = token
        }
        subject.send(2)
        #expect(received.count == 1)
    }

    @Test func completionReleasesSubscribersEvenWhileTheirTokensLive() {
        let subject = PassthroughSubject<Int, Never>()
        weak var weakProbe: LifetimeProbe?
        let token: CancellationToken
        do {
            let probe = LifetimeProbe()
            weakProbe = probe
            token = subject.signal.sink { _ in _ = probe }
        }
        #expect(weakProbe != nil)
        subject.send(completion: .finished)
        #expect(weakProbe == nil)
        _ = token
    }

    @Test func aSubscriberCancelledDuringABroadcastReceivesNothingMore() {
        let subject = PassthroughSubject<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let secondToken = Locked<CancellationToken?>(nil)
        let first = subject.signal.sink { _ in secondToken.withLock { $0 }?.cancel() }
        secondToken.withLock { $0 = second.subscribe(to: subject.signal) }
        subject.send(1)
        subject.send(2)
        #expect(second.events.isEmpty)
        _ = first
    }

    @Test func aSendFromASubscriberIsDeliveredAfterTheCurrentValueToEveryone() {
        let subject = PassthroughSubject<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let firstValues = Locked<[Int]>([])
        let first = subject.signal.sink { value in
            firstValues.withLock { $0.append(value) }
            if value == 1 { subject.send(2) }
        }
        let token = second.subscribe(to: subject.signal)
        subject.send(1)
        #expect(firstValues.withLock { $0 } == [1, 2])
        #expect(second.values == [1, 2])
        _ = (first, token)
    }

    @Test func aSubscriberAddedDuringADeliveryDoesNotSeeAValueQueuedBeforeIt() {
        let subject = PassthroughSubject<Int, Never>()
        let late = SignalRecorder<Int, Never>()
        let lateToken = ContractTokenBox()
        let first = subject.signal.sink { value in
            guard value == 1 else { return }
            // Sent (and queued behind this delivery) before the late subscriber subscribes.
            subject.send(2)
            lateToken.token = late.subscribe(to: subject.signal)
        }
        subject.send(1)
        subject.send(3)
        #expect(late.values == [3])
        _ = first
    }

    @Test func aSubscriberAddedFromAnotherThreadDuringADeliveryDoesNotSeeEarlierValues() {
        // Thread A delivers value 1 and, while its subscriber runs, thread B sends 2 (queued)
        // and then subscribes: B's subscriber must only receive what was sent after it.
        let subject = PassthroughSubject<Int, Never>()
        let late = SignalRecorder<Int, Never>()
        let lateToken = ContractTokenBox()
        let first = subject.signal.sink { value in
            guard value == 1 else { return }
            DispatchQueue.global().sync {
                subject.send(2)
                lateToken.token = late.subscribe(to: subject.signal)
            }
        }
        subject.send(1)
        subject.send(3)
        #expect(late.values == [3])
        _ = first
    }

    @Test func aCompletionSentFromASubscriberEndsEveryoneAfterTheCurrentValue() {
        let subject = PassthroughSubject<Int, Never>()
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        let t0 = subject.signal.sink { _ in subject.send(completion: .finished) }
        let t1 = first.subscribe(to: subject.signal)
        let t2 = second.subscribe(to: subject.signal)
        subject.send(1)
        subject.send(2)
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(1), .finished])
        _ = (t0, t1, t2)
    }

    @Test func voidSubjectSends() {
        let subject = PassthroughSubject<Void, Never>()
        let received = Counter()
        let token = subject.signal.sink { received.increment() }
        subject.send(())
        subject.send(())
        #expect(received.count == 2)
        _ = token
    }

    @Test func concurrentSendsAreSerialisedAndAllDelivered() {
        let subject = PassthroughSubject<Int, Never>()
        let threads = 8
        let perThread = 500
        let detector = OverlapDetector()
        let received = Locked<[Int]>([])
        let completions = Counter()
        let token = subject.signal.observe(Observer { event in
            detector.run {
                switch event {
                case .value(let value): received.withLock { $0.append(value) }
                case .finished, .failed: completions.increment()
                }
            }
        })
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread { subject.send(thread * perThread + index) }
        }
        subject.send(completion: .finished)
        let values = received.withLock { $0 }
        #expect(detector.count == 0)
        #expect(values.count == threads * perThread)
        #expect(Set(values).count == threads * perThread)
        // Each thread's values arrive in the order it sent them.
        for thread in 0..<threads {
            let mine = values.filter { $0 / perThread == thread }
            #expect(mine == mine.sorted())
        }
        #expect(completions.count == 1)
        _ = token
    }

    @Test func concurrentCompletionsDeliverExactlyOne() {
        for _ in 0..<50 {
            let subject = PassthroughSubject<Int, TestError>()
            let recorder = SignalRecorder<Int, TestError>()
            let token = recorder.subscribe(to: subject.signal)
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                subject.send(index)
                if index % 2 == 0 {
                    subject.send(completion: .finished)
                } else {
                    subject.send(completion: .failure(TestError(code: index)))
                }
                subject.send(index + 10)
            }
            #expect(recorder.events.filter(\.isTerminal).count == 1)
            #expect(recorder.violations == 0)
            _ = token
        }
    }

    @Test func concurrentSubscribeAndCancelWhileSending() {
        let subject = PassthroughSubject<Int, Never>()
        let stop = Atomic<Bool>(false)
        let received = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            if index == 0 {
                for value in 0..<2_000 { subject.send(value) }
                stop.store(true, ordering: .releasing)
            } else {
                while !stop.load(ordering: .acquiring) {
                    let token = subject.signal.sink { _ in received.increment() }
                    token.cancel()
                }
            }
        }
        // Every subscriber was cancelled: a final send reaches nobody.
        let before = received.count
        subject.send(-1)
        #expect(received.count == before)
    }
}
