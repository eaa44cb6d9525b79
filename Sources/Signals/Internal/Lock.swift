import Synchronization

// The package's one lock family: `Lock`, held inline by the classes of the Signals core, and
// `Locked`, a value behind a `Lock` in a box of its own, for everything else. Neither is called
// `Mutex`, so neither shadows `Synchronization.Mutex` in a file that imports both.

/// The lock of every Transit module: a `Mutex` from Synchronization, plus a hand-off marker the
/// thread sanitizer can see.
///
/// Why the marker: on Linux, a contended `Mutex` is handed from one thread to the next inside the
/// kernel (a priority-inheriting futex), where the thread sanitizer cannot see it, so it reports
/// races on data that the lock does protect and `swift test --sanitize=thread` fails on correct
/// code. The holder stores to `handoff` with release order before unlocking and the next holder
/// loads it with acquire order after locking: on x86 both are plain moves, and the sanitizer sees
/// the hand-off. The guarded state must live outside the `Mutex` (in the owning class, touched
/// only inside ``withLock(_:)``), so that every access to it starts after the acquiring load.
///
/// Never call out to user code or an observer from inside `withLock`, and never release there
/// what user code may own (a value, a closure, an observer): its `deinit` is user code too. Take
/// it out and let it go after the lock.
@usableFromInline
package struct Lock: ~Copyable, Sendable {
    @usableFromInline
    let mutex: Synchronization.Mutex<Void>
    @usableFromInline
    let handoff: Atomic<UInt8>

    /// Creates an unlocked lock.
    @inlinable
    package init() {
        mutex = Synchronization.Mutex(())
        handoff = Atomic(0)
    }

    /// Runs `body` with the lock held.
    @inlinable
    package borrowing func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { _ throws(E) -> R in
            _ = handoff.load(ordering: .acquiring)
            defer { handoff.store(0, ordering: .releasing) }
            return try body()
        }
    }
}

/// A value reachable only while holding a ``Lock``: the boxed member of the lock family, shared
/// by reference, so closures can capture it.
///
/// Hot paths of the Signals core keep a ``Lock`` inline in their own classes instead, which saves
/// this box's allocation. The same rules hold: no user code, and no release of what user code
/// owns, inside ``withLock(_:)``.
///
/// Thread safety: `stored` is only touched inside `lock.withLock`, which is why the class may be
/// `@unchecked Sendable`.
@usableFromInline
package final class Locked<Value>: @unchecked Sendable {
    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var stored: Value

    /// Creates a lock protecting `value`.
    @inlinable
    package init(_ value: Value) {
        stored = value
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try lock.withLock { () throws(E) -> Result in try body(&stored) }
    }
}
