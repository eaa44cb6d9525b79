import Foundation
import Signals

// The async forms of DiskCache's blocking methods: the same behaviour, run on the cache's own
// queue so that no thread of the cooperative pool blocks on file I/O.
extension DiskCache {
    /// Runs `work` on the cache's queue and returns its result.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before the work starts on the
    ///   queue (the work then does not run); once started, the work runs to the end.
    ///
    /// `whenQueued` is called once the work waits on the queue (tests cancel a task there).
    func perform<T: Sendable>(
        whenQueued: (@Sendable () -> Void)? = nil,
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

    /// The record stored under `key`; see ``record(forKey:includingExpired:)``.
    public func record(forKey key: String, includingExpired: Bool = false) async throws -> CacheRecord? {
        try await perform { try self.record(forKey: key, includingExpired: includingExpired) }
    }

    /// Whether a fresh record is stored under `key`; see ``containsRecord(forKey:)``.
    public func containsRecord(forKey key: String) async throws -> Bool {
        try await perform { try self.containsRecord(forKey: key) }
    }

    /// Stores `data` under `key`; see ``store(_:forKey:ttl:metadata:)``.
    public func store(_ data: Data, forKey key: String, ttl: Duration? = nil, metadata: Data = Data()) async throws {
        try await perform { try self.store(data, forKey: key, ttl: ttl, metadata: metadata) }
    }

    /// Removes the record stored under `key`; see ``removeRecord(forKey:)``.
    public func removeRecord(forKey key: String) async throws {
        try await perform { try self.removeRecord(forKey: key) }
    }

    /// Removes every record; see ``removeAll()``.
    public func removeAll() async throws {
        try await perform { try self.removeAll() }
    }

    /// Pins the record stored under `key`; see ``pin(_:)``.
    @discardableResult
    public func pin(_ key: String) async throws -> Int {
        try await perform { try self.pin(key) }
    }

    /// Removes one pin; see ``unpin(_:)``.
    @discardableResult
    public func unpin(_ key: String) async throws -> Int {
        try await perform { try self.unpin(key) }
    }

    /// Collects garbage; see ``collectGarbage()``.
    @discardableResult
    public func collectGarbage() async throws -> GarbageCollectionReport {
        try await perform { try self.collectGarbage() }
    }
}
