import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

/// `replaceError` and `mapToResult`, which turn a failure into values.
@Suite
struct ReplaceErrorTests {
    @Test func replaceErrorAndMapToResult() {
        let replaced = SignalRecorder<Int, Never>()
        replaced.subscribe(to: Signal<Int, TestError>(error: TestError()).replaceError(with: -1))
        #expect(replaced.events == [.value(-1), .finished])
        let emptied = SignalRecorder<Int, Never>()
        emptied.subscribe(to: Signal<Int, TestError>(error: TestError()).catch { _ in Signal<Int, Never>.empty })
        #expect(emptied.events == [.finished])
        let results = SignalRecorder<Result<Int, TestError>, Never>()
        results.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError(code: 9))
            return nil
        }.mapToResult())
        #expect(results.events == [.value(.success(1)), .value(.failure(TestError(code: 9))), .finished])
    }
}
