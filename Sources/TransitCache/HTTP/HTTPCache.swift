import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// A private HTTP cache (RFC 9111) on a ``DiskCache``: the store and the rules that
/// `transport.caching(in:)` applies to every request it sees.
///
/// Being a *private* cache, it may keep responses to requests with `Authorization` and
/// responses marked `private`. It is **partitioned by credential**: a stored response is served,
/// and revalidated, only for a request with the same values of every credential header as the
/// request it answered (or the same absence of them), so one client acting for several users
/// never hands one user's response to another. The credential headers are those Transit treats
/// as secret everywhere (one list, in `Redaction`: `Authorization`, `Proxy-Authorization`,
/// `Cookie`, and every name that looks secret — `X-API-Key`, `X-Auth-Token`, `X-Session-Id`, …),
/// and the names a request's `TransportRequest.sensitiveHeaders` adds: an `HTTPClient` puts
/// its `Configuration.sensitiveHeaders` there, so a client's own secret headers partition the
/// cache too. Each credential has its own entry per URL. The credentials are never stored: the
/// partition is an HMAC-SHA256 of them under a random key kept in the folder (created on first
/// use), and a response that varies on a credential header keeps no value of it.
///
/// The folder the cache creates, and every file in it, are readable by their owner only
/// (folders 0700, files 0600); a cache folder and records found readable by others are made so
/// when the cache opens them.
///
/// Credentials added below the cache — cookies that `URLSession` adds from its cookie storage —
/// are not seen by it: call ``removeAll()`` on sign-out, and give each user a folder of their
/// own where that matters.
///
/// ```swift
/// let cache = try HTTPCache(records: DiskCache(directory: cachesURL.appending(path: "http-\(userID)")))
/// let client = HTTPClient(transport: URLSessionTransport.shared.caching(in: cache))
/// // on sign-out:
/// try cache.removeAll()
/// ```
public final class HTTPCache: Sendable {
    /// Where responses are stored: a record per URL, the body as payload, status and headers as
    /// metadata. Its limits bound the cache; its clock is the cache's clock.
    package let records: DiskCache
    /// The fraction of the time since `Last-Modified` for which a response without explicit
    /// freshness is fresh.
    let heuristicFraction: Double
    /// The longest heuristic freshness, in seconds.
    let maximumHeuristicSeconds: Double
    private let offline = Locked(false)
    private let eventSubject = PassthroughSubject<HTTPCacheEvent, Never>()
    /// The folder's secret key for credential digests, once read.
    private let partitionKey = Locked<[UInt8]?>(nil)
    /// The last partition computed, with the credential values it digests: a client sends the
    /// same credential again and again, and the digest need not be computed each time. Kept in
    /// memory only, and forgotten by ``removeAll()``.
    private let lastPartition = Locked<(message: [UInt8], partition: String)?>(nil)

    /// Creates an HTTP cache that stores its responses in `records`:
    /// `try HTTPCache(records: DiskCache(directory: folder))`.
    ///
    /// - Parameters:
    ///   - records: the store; its limits bound the cache and its clock is the cache's clock.
    ///   - heuristicFraction: the fraction of the time since `Last-Modified` for which a response
    ///     without explicit freshness is fresh, where RFC 9111 §4.2.2 allows a heuristic.
    ///     Default 10 %.
    ///   - maximumHeuristicLifetime: the longest heuristic freshness. Default one day.
    public init(records: DiskCache, heuristicFraction: Double = 0.1, maximumHeuristicLifetime: Duration = .seconds(86_400)) {
        self.records = records
        self.heuristicFraction = heuristicFraction
        maximumHeuristicSeconds = maximumHeuristicLifetime.timeInterval
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
    /// HMAC-SHA256 of its credential header fields (every field
    /// `Redaction.isSecretHeader(_:additional:)` accepts with the request's
    /// `TransportRequest.sensitiveHeaders`: each name lower-cased and its value, with their
    /// lengths, in the order of the names, repeated fields in their order), under the folder's
    /// secret key, in hexadecimal.
    func partition(of request: TransportRequest) -> String {
        let additional = request.sensitiveHeaders
        var credentials: [(name: [UInt8], position: Int, value: [UInt8])] = []
        for (position, field) in request.headerFields.enumerated() where Redaction.isSecretHeader(field.name, additional: additional) {
            credentials.append((Array(field.name.lowercased().utf8), position, Array(field.value.utf8)))
        }
        guard !credentials.isEmpty else { return "" }
        credentials.sort { $0.name.lexicographicallyPrecedes($1.name) || $0.name == $1.name && $0.position < $1.position }
        var message: [UInt8] = []
        for credential in credentials {
            message.appendLittleEndian(UInt64(credential.name.count))
            message.append(contentsOf: credential.name)
            message.appendLittleEndian(UInt64(credential.value.count))
            message.append(contentsOf: credential.value)
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

}

extension HTTPTransport {
    /// This transport behind an HTTP cache: a transport decorator that answers from `cache` what
    /// it may, and stores what it can, following RFC 9111 for a private cache. It sees the final
    /// request (after the client's headers, authorisers and redirects), so it composes with
    /// everything else:
    ///
    /// ```swift
    /// let client = HTTPClient(transport: URLSessionTransport.shared.caching(in: cache))
    /// ```
    ///
    /// What it does:
    /// - **Only `GET` and `HEAD`.** A `GET` response is stored if its status and headers allow it
    ///   (not `no-store` in request or response, not `Vary: *`; explicit freshness — `max-age`,
    ///   `Expires` — `public`/`private`, or a status cacheable by default); a `HEAD` is answered
    ///   from a fresh stored `GET` response. Requests with a body file, a `Range` or their own
    ///   conditional headers pass through untouched. A successful unsafe request (`POST`, `PUT`,
    ///   `PATCH`, `DELETE`, …) removes the stored responses for its URL and for the same-origin
    ///   `Location`/`Content-Location` (for every credential the cache instance knows of).
    /// - **Partitioned by credential**: a stored response is served and revalidated only for a
    ///   request with the same values of every credential header as the one it answered:
    ///   `Authorization`, `Proxy-Authorization`, `Cookie`, every header Transit's one list of
    ///   secret names covers (`X-API-Key`, `X-Auth-Token`, …) and the request's
    ///   `TransportRequest.sensitiveHeaders` (a client's own; see ``HTTPCache``). Their values
    ///   reach the disk only as a keyed digest, `Vary` on them included.
    /// - **Cookies are not stored**: a `Set-Cookie` (or `Set-Cookie2`) is delivered with the response
    ///   that carried it, a 304's included, but never written to the cache's files nor served again
    ///   from them: a session cookie must not outlive its exchange on disk.
    /// - **Sign-out wins**: a response whose exchange looked the request up before
    ///   ``HTTPCache/removeAll()`` is never stored, nor is a `304` that arrives after it.
    /// - **Freshness** (RFC 9111 §4.2): `max-age`, else `Expires` − `Date`, else the heuristic only
    ///   where the RFC allows it (a status cacheable by default, or `public`, with `Last-Modified`);
    ///   age from `Age`, `Date` and the request/response times. Request `max-age`, `min-fresh`,
    ///   `max-stale`, `no-cache` (and `Pragma: no-cache`), `only-if-cached` (504 when nothing
    ///   fits) are honoured; response `no-cache` always revalidates, `must-revalidate` forbids
    ///   serving it stale.
    /// - **Validation**: a stale response with `ETag` or `Last-Modified` is revalidated with
    ///   `If-None-Match` / `If-Modified-Since`; a `304` is answered with the stored body and the
    ///   stored headers updated from the 304 (and stored again); any other answer replaces it.
    /// - **`Vary`**: a stored response is used only for requests with the same values of the
    ///   headers it varies on (one variant per URL is kept: the latest).
    /// - **`stale-if-error`** (RFC 5861, in the response or the request): when the network fails
    ///   or the server answers 500, 502, 503 or 504, a stale response within that window is served.
    /// - **Offline mode** (``HTTPCache/isOffline``): answers from the cache only.
    /// - **Bodies stream**: a response is written to the cache as its chunks pass through to the
    ///   consumer, never buffered, and a stored body is served in chunks; a download of any size
    ///   stays in bounded memory. A write that fails (full or read-only folder) is reported on
    ///   ``HTTPCache/events`` and the response is delivered as if there were no cache.
    ///
    /// Served responses carry an `Age` header. Events on ``HTTPCache/events`` tell what happened.
    public func caching(in cache: HTTPCache) -> some HTTPTransport {
        CachingTransport(self, cache: cache)
    }
}
