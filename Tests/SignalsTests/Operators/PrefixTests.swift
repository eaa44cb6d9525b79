import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct PrefixTests {
    @Test func prefixSendsAtMostCountValues() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.prefix(2))
        probe.send(.value(1))
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.events == [.value(1), .value(2), .finished])
        let none = SignalRecorder<Int, TestError>()
        none.subscribe(to: probe.signal.prefix(0))
        #expect(none.events == [.finished])
        #expect(probe.subscriptions == 1)
        withExtendedLifetime(token) {}
    }
}
