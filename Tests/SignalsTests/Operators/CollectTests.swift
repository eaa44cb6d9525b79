import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct CollectTests {
    @Test func collectSendsOneArrayOnFinishAndNothingOnFailure() {
        let recorder = SignalRecorder<[Int], TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(sequence: [1, 2, 3]).collect())
        #expect(recorder.events == [.value([1, 2, 3]), .finished])
        let failed = SignalRecorder<[Int], TestError>()
        failed.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError(code: 3))
            return nil
        }.collect())
        #expect(failed.events == [.failed(TestError(code: 3))])
    }
}
