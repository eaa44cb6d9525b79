import Signals
import Testing

struct TestError: Error, Equatable, Sendable {
    var code: Int = 0
}

/// Counts something from any thread.
final class Counter: Sendable {
    private let value = Locked(0)
    init() {}
    @discardableResult
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}

/// Waits until `condition` holds, checking it as other tasks make progress. Fails after 300
/// seconds, so a broken condition fails the test instead of hanging it.
func waitUntil(_ condition: @Sendable () -> Bool) async throws {
    // Far above what any condition needs: a thread-sanitizer run on a stalled two-core machine
    // once took 102 s to let a cancelled loop end, past the 90 s this limit used to be.
    let deadline = ContinuousClock.now.advanced(by: .seconds(300))
    while !condition() {
        try #require(ContinuousClock.now < deadline, "condition not met in time")
        await Task.yield()
    }
}
