import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct HandleEventsTests {
    @Test func handleEventsRunsItsCallbacksInOrder() {
        let log = Locked<[String]>([])
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2]).handleEvents(
            receiveSubscription: { log.withLock { $0.append("subscription") } },
            receiveValue: { value in log.withLock { $0.append("value \(value)") } },
            receiveCompletion: { _ in log.withLock { $0.append("completion") } },
            receiveCancel: { log.withLock { $0.append("cancel") } }
        ))
        #expect(log.withLock { $0 } == ["subscription", "value 1", "value 2", "completion"])
        #expect(recorder.events == [.value(1), .value(2), .finished])
    }

    @Test func handleEventsReportsCancelOnceFromManyThreadsAndNotAfterCompletion() {
        let cancels = Counter()
        let probe = ContractProbe<Int, Never>()
        let token = probe.signal.handleEvents(receiveCancel: { cancels.increment() }).sink { _ in }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in token.cancel() }
        #expect(cancels.count == 1)
        #expect(probe.teardowns == 1)

        let finished = probe.signal.handleEvents(receiveCancel: { cancels.increment() }).sink { _ in }
        probe.send(.finished)
        finished.cancel()
        #expect(cancels.count == 1)
    }
}
