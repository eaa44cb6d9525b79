import Foundation
import Signals

extension DiskCache {
    /// The cache's operations as cold signals: each runs when subscribed (again on every
    /// subscription), on the cache's own queue, sends its result and finishes, or fails with a
    /// ``CacheError``. Cancelling before the work starts keeps it from running.
    ///
    /// ```swift
    /// cache.signals.record(forKey: "avatar")
    ///     .compactMap { $0?.data }
    ///     .sink(receiveCompletion: { _ in }, receiveValue: show)
    /// ```
    public var signals: DiskCacheSignals { DiskCacheSignals(cache: self) }
}

/// ``DiskCache``'s operations as signals; see ``DiskCache/signals``.
public struct DiskCacheSignals: Sendable {
    /// The cache the signals operate on.
    let cache: DiskCache

    /// Sends the record stored under `key`, or `nil` on a miss; see
    /// `record(forKey:includingExpired:)`.
    public func record(forKey key: String, includingExpired: Bool = false) -> Signal<CacheRecord?, any Error> {
        run { try cache.record(forKey: key, includingExpired: includingExpired) }
    }

    /// Sends whether a fresh record is stored under `key`.
    public func containsRecord(forKey key: String) -> Signal<Bool, any Error> {
        run { try cache.containsRecord(forKey: key) }
    }

    /// Stores `data` under `key`, then sends `()`; see `store(_:forKey:ttl:metadata:)`.
    public func store(_ data: Data, forKey key: String, ttl: Duration? = nil, metadata: Data = Data()) -> Signal<Void, any Error> {
        run { try cache.store(data, forKey: key, ttl: ttl, metadata: metadata) }
    }

    /// Removes the record stored under `key`, then sends `()`.
    public func removeRecord(forKey key: String) -> Signal<Void, any Error> {
        run { try cache.removeRecord(forKey: key) }
    }

    /// Removes every record, then sends `()`.
    public func removeAll() -> Signal<Void, any Error> {
        run { try cache.removeAll() }
    }

    /// Pins the record stored under `key` and sends its new pin count.
    public func pin(_ key: String) -> Signal<Int, any Error> {
        run { try cache.pin(key) }
    }

    /// Removes one pin from the record stored under `key` and sends its new pin count.
    public func unpin(_ key: String) -> Signal<Int, any Error> {
        run { try cache.unpin(key) }
    }

    /// Collects garbage and sends the report.
    public func collectGarbage() -> Signal<GarbageCollectionReport, any Error> {
        run { try cache.collectGarbage() }
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) -> Signal<T, any Error> {
        let queue = cache.queue
        return Signal { observer in
            let cancelled = ActionCancellable {}
            queue.async {
                guard !cancelled.isCancelled else { return }
                do {
                    observer.send(try work())
                    observer.finish()
                } catch {
                    observer.fail(error)
                }
            }
            return { cancelled.cancel() }
        }
    }
}
