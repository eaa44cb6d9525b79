import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct CatchTests {
    @Test func catchSwitchesToTheHandlersSignalOnce() {
        let handled = Counter()
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError())
            return nil
        }.catch { _ in
            handled.increment()
            return Signal(sequence: [8, 9])
        })
        #expect(recorder.events == [.value(1), .value(8), .value(9), .finished])
        #expect(handled.count == 1)
    }

    @Test func catchTearsDownTheFailedUpstreamBeforeTheReplacementRuns() {
        let probe = ContractProbe<Int, TestError>()
        let replacement = ContractProbe<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: probe.signal.catch { _ in replacement.signal })
        probe.send(.failed(TestError()))
        #expect(probe.teardowns == 1)
        #expect(replacement.subscriptions == 1)
        replacement.send(.value(5))
        token.cancel()
        #expect(replacement.teardowns == 1)
        #expect(recorder.events == [.value(5)])
    }
}
