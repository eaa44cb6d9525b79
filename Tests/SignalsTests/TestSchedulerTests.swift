import Signals
import Testing
import SignalsTesting

@Suite
struct TestSchedulerTests {
    @Test func testSchedulerRunsInVirtualTime() {
        let scheduler = TestScheduler()
        let ran = Locked<[Int]>([])
        scheduler.schedule(after: .seconds(30)) { ran.withLock { $0.append(30) } }
        scheduler.schedule(after: .seconds(10)) { ran.withLock { $0.append(10) } }
        let cancelled = scheduler.schedule(after: .seconds(20)) { ran.withLock { $0.append(20) } }
        cancelled.cancel()
        scheduler.advance(by: .seconds(29))
        #expect(ran.withLock { $0 } == [10])
        scheduler.advance(by: .seconds(1))
        #expect(ran.withLock { $0 } == [10, 30])
        #expect(scheduler.now == .seconds(30))
    }
}
