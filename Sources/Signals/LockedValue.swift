import Synchronization

/// The lock of the Signals core: a `Mutex` from Synchronization, plus a hand-off marker the thread
/// sanitizer can see.
///
/// Why the marker: on Linux, a contended `Mutex` is handed from one thread to the next inside the
/// kernel (a priority-inheriting futex), where the thread sanitizer cannot see it, so it reports
/// races on data that the lock does protect. The holder stores to `handoff` with release order
/// before unlocking and the next holder loads it with acquire order after locking: on x86 both
/// are plain moves, and the sanitizer sees the hand-off. The guarded state must live outside the
/// `Mutex` (in the owning class, touched only inside ``withLock(_:)``), so that every access to it
/// starts after the acquiring load.
@usableFromInline
struct SanitizedMutex: ~Copyable, Sendable {
    @usableFromInline
    let mutex: Synchronization.Mutex<Void>
    @usableFromInline
    let handoff: Atomic<UInt8>

    @inlinable
    init() {
        mutex = Synchronization.Mutex(())
        handoff = Atomic(0)
    }

    /// Runs `body` with the lock held. `body` must not call user code or observers.
    @inlinable
    borrowing func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { _ throws(E) -> R in
            _ = handoff.load(ordering: .acquiring)
            defer { handoff.store(0, ordering: .releasing) }
            return try body()
        }
    }
}

/// A value behind a lock, shareable between the closures of one subscription.
///
/// Thread safety: `stored` is only touched inside `lock.withLock`, which is why the class may be
/// `@unchecked Sendable`; closures passed to ``withLock(_:)`` must not call out to user code or
/// observers.
@usableFromInline
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    @usableFromInline
    let lock = SanitizedMutex()
    @usableFromInline
    @exclusivity(unchecked) var stored: Value

    @inlinable
    init(_ value: Value) {
        stored = value
    }

    @inlinable
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.withLock { body(&stored) }
    }

    @inlinable
    var value: Value {
        lock.withLock { stored }
    }
}
