import Signals

/// A value shared between threads, read and changed under a lock: the example's state (what the
/// forum server has seen, what the narrator printed) is touched from the server's connections and
/// from the requests' observers at once.
final class Guarded<Value: Sendable>: Sendable {
    private let mutex: Locked<Value>

    init(_ value: Value) {
        mutex = Locked(value)
    }

    /// Runs `body` with the value, holding the lock; `body` must not block or call back into this
    /// value.
    func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }
}
