import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct MapTests {
    // MARK: - Operators: what each one sends

    @Test func mapTransformsValuesAndPassesTerminals() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(sequence: [1, 2]).map { $0 * 10 })
        #expect(recorder.events == [.value(10), .value(20), .finished])
        let failed = SignalRecorder<Int, TestError>()
        failed.subscribe(to: Signal<Int, TestError>(error: TestError(code: 2)).map { $0 * 10 })
        #expect(failed.events == [.failed(TestError(code: 2))])
    }
}
