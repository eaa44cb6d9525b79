import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// A private HTTP cache (RFC 9111) on a ``DiskCache``: the store and the rules that
/// ``CachingTransport`` applies to every request it sees.
///
/// Being a *private* cache, it may keep responses to requests with `Authorization` and
/// responses marked `private`. It is **partitioned by credential**: a stored response is served,
/// and revalidated, only for a request with the same `Authorization`, `Proxy-Authorization`
/// and `Cookie` values as the request it answered (or the same absence of them), so one client
/// acting for several users never hands one user's response to another. Each credential has its
/// own entry per URL. The credentials are never stored: the partition is an HMAC-SHA256 of
/// them under a random key kept in the folder (created on first use).
///
/// Credentials added below the cache — cookies that `URLSession` adds from its cookie storage —
/// are not seen by it: call ``removeAll()`` on sign-out, and give each user a folder of their
/// own where that matters.
///
/// ```swift
/// let cache = try HTTPCache(directory: cachesURL.appending(path: "http-\(userID)"))
/// let client = HTTPClient(transport: URLSessionTransport.shared.caching(in: cache))
/// // on sign-out:
/// try cache.removeAll()
/// ```
public final class HTTPCache: Sendable {
    /// The heuristics of the cache.
    public struct Configuration: Sendable {
        /// The fraction of the time since `Last-Modified` for which a response without explicit
        /// freshness is fresh, where RFC 9111 §4.2.2 allows a heuristic. Default 10 %.
        public var heuristicFraction: Double
        /// The longest heuristic freshness. Default one day.
        public var maximumHeuristicLifetime: Duration

        /// Creates a configuration.
        public init(heuristicFraction: Double = 0.1, maximumHeuristicLifetime: Duration = .seconds(86_400)) {
            self.heuristicFraction = heuristicFraction
            self.maximumHeuristicLifetime = maximumHeuristicLifetime
        }
    }

    /// Where responses are stored: a record per URL, the body as payload, status and headers as
    /// metadata. Its limits bound the cache; its clock is the cache's clock.
    public let records: DiskCache
    /// The heuristics in effect.
    let configuration: Configuration
    private let offline = Locked(false)
    private let eventSubject = PassthroughSubject<HTTPCacheEvent, Never>()
    /// The folder's secret key for credential digests, once read.
    private let partitionKey = Locked<[UInt8]?>(nil)
    /// The last partition computed, with the credential values it digests: a client sends the
    /// same credential again and again, and the digest need not be computed each time. Kept in
    /// memory only, and forgotten by ``removeAll()``.
    private let lastPartition = Locked<(message: [UInt8], partition: String)?>(nil)

    /// Creates an HTTP cache that stores its responses in `records`.
    public init(records: DiskCache, configuration: Configuration = Configuration()) {
        self.records = records
        self.configuration = configuration
    }

    /// Creates an HTTP cache in the folder `directory` (created if needed), holding at most
    /// `sizeLimit` bytes.
    public convenience init(
        directory: URL,
        sizeLimit: Int = 256 * 1024 * 1024,
        configuration: Configuration = Configuration()
    ) throws {
        try self.init(records: DiskCache(directory: directory, configuration: .init(sizeLimit: sizeLimit)), configuration: configuration)
    }

    /// Offline mode: when `true`, requests are answered from the cache only — a stored response
    /// is served however stale (unless it must be revalidated: `no-cache`, or stale with
    /// `must-revalidate`), and a request with nothing usable stored fails with
    /// `URLError(.notConnectedToInternet)`. Nothing is sent to the server.
    public var isOffline: Bool {
        get { offline.withLock { $0 } }
        set { offline.withLock { $0 = newValue } }
    }

    /// What the cache does with each request; a hot signal.
    public var events: Signal<HTTPCacheEvent, Never> {
        eventSubject.signal
    }

    /// Removes every stored response (a user signed out).
    ///
    /// Sign-out wins over every exchange in flight: a response to a request that was looked up
    /// before this call is never stored, and a `304 Not Modified` that arrives after it does not
    /// bring the removed response back — whichever instance or process on the folder the
    /// exchange runs in (the generation the exchange took at lookup is checked again under the
    /// folder lock when it would store).
    public func removeAll() throws {
        lastPartition.withLock { $0 = nil }
        try records.removeAll()
    }

    /// Removes the stored responses for `url`, if any: the one for requests without credentials
    /// and those for every credential this instance knows of (stored by it, or found in the folder
    /// when it was opened or by `collectGarbage()`).
    public func removeResponse(for url: URL) throws {
        for key in keys(for: url) {
            try records.removeRecord(forKey: key)
        }
    }

    /// Removes the stored responses for `url`, as ``removeResponse(for:)``; `true` if there was
    /// one.
    func invalidate(_ url: URL) -> Bool {
        var removed = false
        for key in keys(for: url) where (try? records.containsRecord(forKey: key)) == true {
            if (try? records.removeRecord(forKey: key)) != nil { removed = true }
        }
        return removed
    }

    /// The record keys of `url`'s responses: without credentials, and every partition known.
    private func keys(for url: URL) -> [String] {
        let base = HTTPCache.key(for: url)
        let partitioned = base + "\n"
        return [base] + records.knownKeys { $0.hasPrefix(partitioned) }
    }

    func send(_ event: HTTPCacheEvent) {
        eventSubject.send(event)
    }

    /// The record key of `url`'s response: the URL without its fragment, then, for a request with
    /// credentials, a line with its `partition`.
    static func key(for url: URL, partition: String = "") -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        components?.fragment = nil
        let key = "GET " + (components?.string ?? url.absoluteString)
        return partition.isEmpty ? key : key + "\n" + partition
    }

    /// The partition of `request`: empty for a request without credentials; otherwise the
    /// HMAC-SHA256 of its credential values (each absent, or present with its length and bytes),
    /// under the folder's secret key, in hexadecimal.
    func partition(of request: URLRequest) -> String {
        let values = StoredResponse.credentialHeaders.map { request.value(forHTTPHeaderField: $0) }
        guard values.contains(where: { $0 != nil }) else { return "" }
        var message: [UInt8] = []
        for value in values {
            guard let value else {
                message.append(0)
                continue
            }
            let bytes = Array(value.utf8)
            message.append(1)
            message.appendLittleEndian(UInt64(bytes.count))
            message.append(contentsOf: bytes)
        }
        if let last = lastPartition.withLock({ $0 }), last.message == message { return last.partition }
        let digest = HMACSHA256.authenticationCode(for: message, key: secretKey())
        let partition = digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        lastPartition.withLock { $0 = (message, partition) }
        return partition
    }

    /// The folder's secret key, read (or created) once. Where it cannot be created (a read-only
    /// folder) a key of this instance's own is used: nothing can be stored there anyway, and
    /// nothing stored before under a key that is not there can be matched.
    private func secretKey() -> [UInt8] {
        if let key = partitionKey.withLock({ $0 }) { return key }
        let key: [UInt8]
        do {
            key = try records.secretKey()
        } catch {
            var generator = SystemRandomNumberGenerator()
            key = (0..<SecretKeyFormat.keySize).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        return partitionKey.withLock { stored in
            if let stored { return stored }
            stored = key
            return key
        }
    }

    var maximumHeuristicSeconds: Double { configuration.maximumHeuristicLifetime.timeInterval }
}

extension HTTPTransport {
    /// This transport behind an HTTP cache: see ``CachingTransport``.
    public func caching(in cache: HTTPCache) -> CachingTransport {
        CachingTransport(self, cache: cache)
    }
}
