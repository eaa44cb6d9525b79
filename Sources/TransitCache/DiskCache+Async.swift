import Foundation
import Signals

// The async way into DiskCache: any of its blocking methods, run on the cache's own queue so that
// no thread of the cooperative pool blocks on file I/O.
extension DiskCache {
    /// Runs `work` with this cache on the cache's own queue, never on a thread of the cooperative
    /// pool, and returns its result: the `async` form of every blocking method, with the same
    /// behaviour.
    ///
    /// ```swift
    /// let record = try await cache.perform { try $0.record(forKey: key) }
    /// try await cache.perform { try $0.store(data, forKey: key, ttl: .seconds(300)) }
    /// let pin = Signal(operation: { try await cache.perform { try $0.pin(key) } })   // as a cold signal
    /// ```
    ///
    /// - Throws: what `work` throws, or `CancellationError` if the task is cancelled before the
    ///   work starts on the queue (the work then does not run); once started, the work runs to
    ///   the end.
    public func perform<T: Sendable>(_ work: @escaping @Sendable (DiskCache) throws -> T) async throws -> T {
        try await perform(whenQueued: nil) { try work(self) }
    }

    /// Runs `work` on the cache's queue and returns its result, as ``perform(_:)``.
    ///
    /// `whenQueued` is called once the work waits on the queue (tests cancel a task there).
    func perform<T: Sendable>(
        whenQueued: (@Sendable () -> Void)?,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let cancelled = Locked(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    guard !cancelled.withLock({ $0 }) else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    continuation.resume(with: Result { try work() })
                }
                whenQueued?()
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }
}
