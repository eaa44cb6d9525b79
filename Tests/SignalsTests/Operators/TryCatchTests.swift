import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct TryCatchTests {
    @Test func tryCatchReRunsTheUpstreamsWorkOnEveryAttempt() {
        let work = Counter()
        let upstream = Signal<Int, TestError>(deferred: {
            let attempt = work.increment()
            return attempt < 3 ? Signal(error: TestError(code: attempt)) : Signal(value: attempt)
        })
        let recorder = SignalRecorder<Int, any Error>()
        // Each handler call returns the upstream again, which runs its work again.
        recorder.subscribe(to: upstream.tryCatch { _ in upstream }.tryCatch { _ in upstream.eraseError() })
        #expect(work.count == 3)
        #expect(recorder.values == [3])
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func tryCatchFailsWithWhatTheHandlerThrows() {
        let recorder = SignalRecorder<Int, any Error>()
        recorder.subscribe(to: Signal<Int, TestError>(error: TestError(code: 1)).tryCatch { error -> Signal<Int, TestError> in
            throw TestError(code: error.code + 40)
        })
        #expect(recorder.failure as? TestError == TestError(code: 41))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func tryCatchMatchingAnErrorHandlesOnlyThatError() {
        let work = Counter()
        let upstream = Signal<Int, TestError>(deferred: {
            Signal(error: TestError(code: work.increment()))
        })
        let matched = SignalRecorder<Int, TestError>()
        matched.subscribe(to: upstream.tryCatch(TestError(code: 1)) { _ in upstream })
        // Attempt 1 failed with code 1 (handled: the upstream's work runs again), attempt 2 with
        // code 2, which does not match and passes through.
        #expect(work.count == 2)
        #expect(matched.events == [.failed(TestError(code: 2))])
    }
}
