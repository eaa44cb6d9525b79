import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct FirstTests {
    @Test func firstSendsTheFirstMatchThenFinishesAndCancelsTheUpstream() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.first { $0 > 1 })
        probe.send(.value(1))
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.events == [.value(2), .finished])
        let empty = SignalRecorder<Int, Never>()
        empty.subscribe(to: Signal<Int, Never>.empty.first())
        #expect(empty.events == [.finished])
        withExtendedLifetime(token) {}
    }
}
