import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

/// `filter` and `compactMap`, which drop values.
@Suite
struct FilterTests {
    @Test func compactMapAndFilterDropValues() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: 1...6).compactMap { $0 % 3 == 0 ? nil : $0 }.filter { $0 % 2 == 0 })
        #expect(recorder.events == [.value(2), .value(4), .finished])
    }

    @Test func mapFilterCompactMap() {
        let recorder = SignalRecorder<String, Never>()
        recorder.subscribe(to: Signal(sequence: 1...6).filter { $0 % 2 == 0 }.map { $0 * 10 }.compactMap { $0 == 40 ? nil : "\($0)" })
        #expect(recorder.events == [.value("20"), .value("60"), .finished])
    }
}
