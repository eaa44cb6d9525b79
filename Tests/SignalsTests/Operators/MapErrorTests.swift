import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct MapErrorTests {
    @Test func mapErrorTransformsTheFailure() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(error: TestError(code: 1)).mapError { TestError(code: $0.code + 1) })
        #expect(recorder.events == [.failed(TestError(code: 2))])
    }
}
