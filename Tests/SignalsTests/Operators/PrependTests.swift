import Dispatch
import Signals
import Synchronization
import Testing
import SignalsTesting

/// `prepend` (and `append`) of values, and `prepend` of a signal.
@Suite
struct PrependTests {
    @Test func appendAndPrependValues() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [0, 1]).append(Signal(value: 2)).append(Signal(sequence: [3, 4])))
        #expect(recorder.events == [.value(0), .value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func prependSignal() {
        let recorder = SignalRecorder<String, Never>()
        recorder.subscribe(to: Signal(value: "a").append(Signal(value: "b")))
        #expect(recorder.events == [.value("a"), .value("b"), .finished])
    }
}
