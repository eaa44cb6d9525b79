#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
// Imported so that this module's `Mutex` shadows `Synchronization.Mutex` in every file of the
// package that imports both.
import Synchronization

#if canImport(Darwin)
@usableFromInline
typealias PlatformLock = os_unfair_lock
#else
@usableFromInline
typealias PlatformLock = pthread_mutex_t
#endif

/// The lock every Transit module uses: a value that can only be reached while holding a
/// platform lock (`os_unfair_lock` on Apple platforms, `pthread_mutex_t` elsewhere).
///
/// Why not `Synchronization.Mutex`: on Linux it takes its contended path in the kernel
/// (priority-inheritance futexes), which the thread sanitizer cannot see, so every contended
/// `Mutex` is reported as a data race and `swift test --sanitize=thread` fails although the code
/// is correct. The platform locks are understood by the sanitizer, and this type drops the OS
/// version floor `Synchronization.Mutex` needs on Apple platforms.
///
/// The value and the lock live in one allocation. Copies of a `Mutex` share the same lock and
/// value. Never call out to user code or an observer from inside `withLock`.
@usableFromInline
package struct Mutex<Value>: @unchecked Sendable {
    // Sendable: the value is only reachable through `withLock`, under the lock.
    @usableFromInline
    let storage: LockStorage<Value>

    /// Creates a lock protecting `value`.
    @inlinable
    package init(_ value: Value) {
        storage = LockStorage.make(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        let lock = storage.lockPointer
        let value = storage.valuePointer
        storage.acquire(lock)
        defer { storage.release(lock) }
        return try body(&value.pointee)
    }
}

@usableFromInline
final class LockStorage<Value>: ManagedBuffer<Value, PlatformLock> {
    @inlinable
    static func make(_ value: Value) -> LockStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
            #else
            lock.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(lock, nil)
            #endif
        }
        return storage
    }

    @inlinable
    var lockPointer: UnsafeMutablePointer<PlatformLock> {
        withUnsafeMutablePointerToElements { $0 }
    }

    @inlinable
    var valuePointer: UnsafeMutablePointer<Value> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    @inlinable
    func acquire(_ lock: UnsafeMutablePointer<PlatformLock>) {
        #if canImport(Darwin)
        os_unfair_lock_lock(lock)
        #else
        _ = pthread_mutex_lock(lock)
        #endif
    }

    @inlinable
    func release(_ lock: UnsafeMutablePointer<PlatformLock>) {
        #if canImport(Darwin)
        os_unfair_lock_unlock(lock)
        #else
        _ = pthread_mutex_unlock(lock)
        #endif
    }

    @inlinable
    deinit {
        withUnsafeMutablePointers { _, lock in
            #if !canImport(Darwin)
            _ = pthread_mutex_destroy(lock)
            #endif
            _ = lock.deinitialize(count: 1)
        }
    }
}
