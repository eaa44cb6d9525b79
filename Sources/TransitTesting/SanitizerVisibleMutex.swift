import Synchronization

/// A value behind a `Mutex`, with hand-offs that ThreadSanitizer can see.
///
/// On Linux, `Mutex` takes its contended path through a futex syscall that ThreadSanitizer does
/// not intercept, so `swift test --sanitize=thread` reports false races between critical
/// sections of one `Mutex` whenever threads contend for it (as the loopback server's connection
/// threads and `URLSession`'s protocol threads do). Here every critical section also does an acquire-release atomic increment on entry and a
/// release increment on exit, which gives ThreadSanitizer the happens-before edge the futex
/// hides. Mutual exclusion is still the `Mutex`'s.
///
/// Thread safety: `value` is only touched inside `mutex.withLock`, which serialises every access;
/// this is why the class may be `@unchecked Sendable`.
final class SanitizerVisibleMutex<Value: Sendable>: @unchecked Sendable {
    private let mutex = Mutex(())
    private let handOff = Atomic<Int>(0)
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. `body` must not call out to user code.
    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        var result: Result<R, E>?
        mutex.withLock { _ in
            handOff.add(1, ordering: .acquiringAndReleasing)
            defer { handOff.add(1, ordering: .releasing) }
            do throws(E) {
                result = .success(try body(&value))
            } catch {
                result = .failure(error)
            }
        }
        return try result!.get()
    }
}
