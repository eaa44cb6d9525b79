// Imported so that this module's `Mutex` shadows `Synchronization.Mutex` in every file of the
// package that imports both.
import Synchronization

/// The general-purpose lock of every Transit module: a value reachable only while holding a
/// ``SanitizedMutex``.
///
/// Why not `Synchronization.Mutex` directly: on Linux a contended `Mutex` is handed from one
/// thread to the next inside the kernel (a priority-inheriting futex) where the thread sanitizer
/// cannot see it, so it reports races on data the lock does protect and
/// `swift test --sanitize=thread` fails on correct code. ``SanitizedMutex`` adds the hand-off the
/// sanitizer needs.
///
/// Unlike `Synchronization.Mutex` this type is copyable: copies share one lock and one value
/// (the value lives in a class), so it can be captured by closures. Hot paths of the Signals core
/// use ``SanitizedMutex`` inline in their own classes instead, which saves that allocation.
/// Never call out to user code or an observer from inside `withLock`.
@usableFromInline
package struct Mutex<Value>: @unchecked Sendable {
    // Sendable: the value is only reachable through `withLock`, under the lock.
    @usableFromInline
    let box: MutexBox<Value>

    /// Creates a lock protecting `value`.
    @inlinable
    package init(_ value: Value) {
        box = MutexBox(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try box.withLock(body)
    }
}

/// The storage of a ``Mutex``. Thread safety: `stored` is only touched inside `lock.withLock`.
@usableFromInline
final class MutexBox<Value>: @unchecked Sendable {
    @usableFromInline
    let lock = SanitizedMutex()
    @usableFromInline
    @exclusivity(unchecked) var stored: Value

    @inlinable
    init(_ value: Value) {
        stored = value
    }

    @inlinable
    func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try lock.withLock { () throws(E) -> Result in try body(&stored) }
    }
}
