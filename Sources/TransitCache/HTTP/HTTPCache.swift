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
/// responses marked `private`: the cache belongs to one user. Create one per signed-in user (a
/// folder per user) and call ``removeAll()`` on sign-out.
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
    public let configuration: Configuration
    private let offline = Locked(false)
    private let eventSubject = PassthroughSubject<HTTPCacheEvent, Never>()

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
        try records.removeAll()
    }

    /// Removes the stored response for `url`, if any.
    public func removeResponse(for url: URL) throws {
        try records.removeRecord(forKey: HTTPCache.key(for: url))
    }

    func send(_ event: HTTPCacheEvent) {
        eventSubject.send(event)
    }

    /// The record key of `url`'s response: the URL without its fragment.
    static func key(for url: URL) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        components?.fragment = nil
        return "GET " + (components?.string ?? url.absoluteString)
    }

    var maximumHeuristicSeconds: Double { configuration.maximumHeuristicLifetime.timeInterval }
}

extension HTTPTransport {
    /// This transport behind an HTTP cache: see ``CachingTransport``.
    public func caching(in cache: HTTPCache) -> CachingTransport {
        CachingTransport(self, cache: cache)
    }
}
