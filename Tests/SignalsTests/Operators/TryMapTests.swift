import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct TryMapTests {
    @Test func tryMapThrowingCancelsTheUpstreamAndFails() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: probe.signal.tryMap { value -> Int in
            if value == 2 { throw TestError(code: 22) }
            return value
        })
        probe.send(.value(1))
        #expect(probe.teardowns == 0)
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.values == [1])
        #expect(recorder.failure as? TestError == TestError(code: 22))
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        token.cancel()
        #expect(probe.teardowns == 1)
    }
}
