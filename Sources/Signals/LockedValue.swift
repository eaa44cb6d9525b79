import Synchronization

/// A value behind a `Mutex`, shareable between the closures of one subscription.
///
/// Thread safety: every access goes through the lock; closures passed to `withLock` must not
/// call out to user code or observers.
@usableFromInline
final class LockedValue<Value: Sendable>: Sendable {
    @usableFromInline
    let mutex: Mutex<Value>

    @usableFromInline
    init(_ value: Value) {
        mutex = Mutex(value)
    }

    @inlinable
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }

    @inlinable
    var value: Value {
        mutex.withLock { $0 }
    }
}
