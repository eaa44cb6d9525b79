import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite struct CurrentValueSubjectTests {
    @Test func newSubscriberReceivesTheCurrentValueFirst() {
        let subject = CurrentValueSubject<Int, TestError>(1)
        let first = SignalRecorder<Int, TestError>()
        let t1 = first.subscribe(to: subject.signal)
        subject.value = 2
        let second = SignalRecorder<Int, TestError>()
        let t2 = second.subscribe(to: subject.signal)
        subject.value = 3
        subject.send(completion: .finished)
        #expect(first.events == [.value(1), .value(2), .value(3), .finished])
        #expect(second.events == [.value(2), .value(3), .finished])
        _ = (t1, t2)
    }

    @Test func valueReadsTheLatestSend() {
        let subject = CurrentValueSubject<String, Never>("a")
        #expect(subject.value == "a")
        subject.value = "b"
        #expect(subject.value == "b")
        subject.value = "c"
        #expect(subject.value == "c")
    }

    @Test func afterCompletionTheValueStaysAndLateSubscribersGetOnlyTheCompletion() {
        let subject = CurrentValueSubject<Int, TestError>(1)
        subject.send(completion: .failure(TestError(code: 9)))
        subject.value = 2
        subject.value = 3
        #expect(subject.value == 1)
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: subject.signal)
        #expect(recorder.events == [.failed(TestError(code: 9))])
        _ = token
    }

    @Test func cancellingRemovesTheSubscriber() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: subject.signal)
        subject.value = 1
        token.cancel()
        subject.value = 2
        #expect(recorder.values == [0, 1])
    }

    @Test func aSubscriberThatCancelsOnTheReplayedValueReceivesNothingMore() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let received = Locked<[Int]>([])
        let token = CancellationToken()
        subject.signal.observe(Observer { event in
            if let value = event.value { received.withLock { $0.append(value) } }
            token.cancel()
        }, in: token)
        subject.value = 1
        #expect(received.withLock { $0 } == [0])
    }

    @Test func subscribingDuringADeliveryReplaysAtThatPointOfTheSequence() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let late = SignalRecorder<Int, Never>()
        let lateToken = Locked<CancellationToken?>(nil)
        // On 1: subscribe `late`, then send 2. `late` gets 1 (current when it subscribed), then 2.
        let first = subject.signal.sink { value in
            if value == 1 {
                lateToken.withLock { $0 = late.subscribe(to: subject.signal) }
                subject.value = 2
            }
        }
        subject.value = 1
        #expect(late.values == [1, 2])
        _ = first
    }

    @Test func subscribingDuringADeliveryAfterAQueuedSendReplaysItOnce() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let late = SignalRecorder<Int, Never>()
        let lateToken = Locked<CancellationToken?>(nil)
        // On 1: send 2 (queued), then subscribe `late`: it gets 2 exactly once.
        let first = subject.signal.sink { value in
            if value == 1 {
                subject.value = 2
                lateToken.withLock { $0 = late.subscribe(to: subject.signal) }
            }
        }
        subject.value = 1
        subject.value = 3
        #expect(late.values == [2, 3])
        _ = first
    }

    @Test func concurrentSubscribersSeeAnUnbrokenRunEndingAtTheLastValue() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let last = 3_000
        let recorders = (0..<40).map { _ in SignalRecorder<Int, Never>() }
        let tokens = Locked<[CancellationToken]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { index in
            if index == 0 {
                for value in 1...last { subject.value = value }
            } else {
                for recorder in recorders[(index - 1) * 10..<index * 10] {
                    let token = recorder.subscribe(to: subject.signal)
                    tokens.withLock { $0.append(token) }
                }
            }
        }
        for recorder in recorders {
            let values = recorder.values
            #expect(values.last == last)
            // Consecutive: no gap, no duplicate, no reordering.
            #expect(values == Array((values.first ?? 0)...last))
        }
    }

    @Test func concurrentSendsAreSerialised() {
        let subject = CurrentValueSubject<Int, Never>(-1)
        let detector = OverlapDetector()
        let received = Counter()
        let token = subject.signal.sink { _ in detector.run { received.increment() } }
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<300 { subject.value = thread * 1000 + index }
        }
        #expect(detector.count == 0)
        #expect(received.count == 1 + 8 * 300)
        _ = token
    }
}
