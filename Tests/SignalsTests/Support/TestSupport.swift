import Signals

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
