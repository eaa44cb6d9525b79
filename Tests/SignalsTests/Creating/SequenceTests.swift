import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct SequenceTests {
    @Test func sequenceSendsEveryElementThenFinishes() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2, 3]))
        #expect(recorder.events == [.value(1), .value(2), .value(3), .finished])
    }

    @Test func sequenceStopsIteratingWhenCancelledInsideAValue() {
        let pulled = Counter()
        let recorder = SignalRecorder<Int, Never>()
        let box = ContractTokenBox()
        let token = CancellationToken()
        box.token = token
        let endless = CountingSequence(pulled: pulled)
        Signal(sequence: endless).observe(Observer { event in
            recorder.observer.send(event)
            if case .value(3) = event { box.cancel() }
        }, in: token)
        #expect(recorder.events == [.value(1), .value(2), .value(3)])
        #expect(pulled.count == 3)
    }

    @Test func infiniteSequenceUnderFirstAndPrefixTerminates() {
        let first = SignalRecorder<Int, Never>()
        first.subscribe(to: Signal(sequence: 1...).first { $0 > 5 })
        #expect(first.events == [.value(6), .finished])
        let prefix = SignalRecorder<Int, Never>()
        prefix.subscribe(to: Signal(sequence: 1...).prefix(3))
        #expect(prefix.events == [.value(1), .value(2), .value(3), .finished])
    }
}

/// 1, 2, 3, … forever, counting the elements pulled.
private struct CountingSequence: Sequence, Sendable {
    let pulled: Counter

    struct Iterator: IteratorProtocol {
        let pulled: Counter
        mutating func next() -> Int? { pulled.increment() }
    }

    func makeIterator() -> Iterator { Iterator(pulled: pulled) }
}
