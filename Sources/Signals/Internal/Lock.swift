import Synchronization

// The package's one lock family: `Lock`, held inline by the classes of the Signals core, and
// `Locked`, a value behind a `Lock` in a box of its own, for everything else (public, so that
// adapters and monitors share state the same way). Neither is called
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

/// A value reachable only while holding a lock: the lock Signals and Transit use for all their
/// shared state, for code of your own (an adapter's, a monitor's) that shares state between threads.
///
/// Use it rather than Synchronization's `Mutex` when your tests run under the thread sanitizer on
/// Linux: there a contended `Mutex` is handed from one thread to the next inside the kernel (a
/// priority-inheriting futex), where the sanitizer cannot see it, so `swift test
/// --sanitize=thread` reports races on data the lock does protect. `Locked` adds a hand-off marker
/// the sanitizer sees (an atomic stored with release order before unlocking and loaded with
/// acquire order after locking: plain moves on x86).
///
/// ```swift
/// let seen = Locked<[String]>([])
/// seen.withLock { $0.append("first") }
/// let count = seen.withLock { $0.count }
/// ```
///
/// A class, shared by reference, so closures can capture it. Never call out to code you do not
/// control from inside ``withLock(_:)``, and never release there what such code may own (a value,
/// a closure, an observer): its `deinit` is that code too. Take it out and let it go after the
/// lock.
///
/// Thread safety: `stored` is only touched inside `lock.withLock`, which is why the class may be
/// `@unchecked Sendable`.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var stored: Value

    /// Creates a lock protecting `value`.
    @inlinable
    public init(_ value: Value) {
        stored = value
    }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try lock.withLock { () throws(E) -> Result in try body(&stored) }
    }
}
