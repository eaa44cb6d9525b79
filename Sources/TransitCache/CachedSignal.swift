import Foundation
import Signals

extension Signal {
    /// Serves the value stored under `key` in `cache` while it is fresh; otherwise subscribes to
    /// this signal and stores each value it sends (the last one stays) before passing it on.
    ///
    /// On every subscription the cache is read first, on the cache's queue: a fresh record that
    /// decodes is sent and the signal finishes without subscribing upstream. A miss — no record,
    /// an expired or damaged one, one that does not decode — subscribes upstream. Caching never
    /// fails the signal: a value that cannot be encoded or stored is still passed on, and the
    /// failure is reported on ``DiskCache/events`` as ``CacheEvent/writeFailed(key:error:)``.
    /// Upstream failures pass through and store nothing.
    ///
    /// ```swift
    /// let profile = api.get(endpoint: "me").map(\.data).decode(Profile.self, decoder: JSONDecoder())
    ///     .cached(in: cache, key: "profile", ttl: .seconds(300))
    /// ```
    ///
    /// - Parameters:
    ///   - ttl: how long a stored value is fresh; `nil` keeps it until it is evicted or removed.
    ///   - encode: turns a value into the record's bytes (JSON by default).
    ///   - decode: turns a record's bytes back into a value (JSON by default).
    public func cached(
        in cache: DiskCache,
        key: String,
        ttl: Duration?,
        encode: @escaping @Sendable (Output) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> Output
    ) -> Signal<Output, Failure> {
        let upstream = self
        return Signal { observer in
            let upstreamToken = CancellationToken()
            let cancelled = ActionCancellable {}
            cache.queue.async {
                guard !cancelled.isCancelled else { return }
                if let record = try? cache.record(forKey: key), let value = try? decode(record.data) {
                    observer.send(value)
                    observer.finish()
                    return
                }
                guard !cancelled.isCancelled else { return }
                upstream.observe(Observer { event in
                    if case .value(let value) = event {
                        do {
                            try cache.store(encode(value), forKey: key, ttl: ttl)
                        } catch let error as CacheError {
                            cache.send(.writeFailed(key: key, error: error))
                        } catch {
                            cache.send(.writeFailed(key: key, error: .encodingFailed(String(describing: error))))
                        }
                    }
                    observer.send(event)
                }, in: upstreamToken)
            }
            return {
                cancelled.cancel()
                upstreamToken.cancel()
            }
        }
    }
}

extension Signal where Output: Codable {
    /// Serves the value stored under `key` in `cache` while it is fresh, else subscribes and
    /// stores each value, encoded as JSON; see ``cached(in:key:ttl:encode:decode:)``.
    public func cached(in cache: DiskCache, key: String, ttl: Duration?) -> Signal<Output, Failure> {
        cached(
            in: cache, key: key, ttl: ttl,
            encode: { value in try JSONEncoder().encode(value) },
            decode: { data in try JSONDecoder().decode(Output.self, from: data) }
        )
    }
}
