import Dispatch
import Signals
import Testing

/// `Locked`, the lock adapters and monitors share state with, through its public API only.
@Suite("Locked")
struct LockedTests {
    @Test func everyChangeFromManyThreadsIsKept() {
        // Eight threads change one value 5,000 times each, reading and writing it in one
        // critical section: a change lost to a race would show in the total. Under
        // `swift test --sanitize=thread` the same run also checks that the sanitizer sees the
        // lock's hand-offs (it would report a race on `total` otherwise).
        let state = Locked<(total: Int, log: [Int])>((0, []))
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for step in 0..<5_000 {
                state.withLock { state in
                    state.total += 1
                    if step == 0 { state.log.append(thread) }
                }
            }
        }
        let (total, log) = state.withLock { ($0.total, $0.log) }
        #expect(total == 40_000)
        #expect(log.sorted() == Array(0..<8))
    }

    @Test func theBodysResultAndErrorComeBackTyped() {
        struct Refused: Error, Equatable {}
        let value = Locked(3)
        #expect(value.withLock { value -> Int in
            value *= 2
            return value + 1
        } == 7)
        #expect(throws: Refused()) {
            try value.withLock { (value: inout Int) throws(Refused) in
                value = 100
                throw Refused()
            }
        }
        // A change made before the body threw is kept: the lock does not roll back.
        #expect(value.withLock { $0 } == 100)
    }
}
