import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct EmptyAndNeverTests {
    @Test func emptyFinishesAndNeverSendsNothing() {
        let empty = SignalRecorder<Int, TestError>()
        empty.subscribe(to: .empty)
        #expect(empty.events == [.finished])
        let never = SignalRecorder<Int, TestError>()
        let token = never.subscribe(to: .never)
        token.cancel()
        token.cancel()
        #expect(never.events.isEmpty)
    }
}
