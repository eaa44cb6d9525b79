import Foundation

/// What an ``HTTPCache`` did with a request: observe ``HTTPCache/events`` to log, count or show
/// cache behaviour. (Responses themselves carry no marker: Transit does not add headers of its
/// own; the `Age` header a cache must send is the only one added.)
public enum HTTPCacheEvent: Hashable, Sendable, CustomStringConvertible {
    /// A fresh stored response was served without contacting the server.
    case hit(URL)
    /// Nothing usable was stored: the request went to the server.
    case miss(URL)
    /// A stored response was stale (or must always be revalidated); the server answered the
    /// conditional request with 304 and the stored body was served with the updated headers.
    /// (A conditional request answered with a new response gives ``stored(_:)`` instead.)
    case revalidated(URL)
    /// A response was stored (its body written as it streamed past).
    case stored(URL)
    /// The server or the network failed and a stale response was served (`stale-if-error`).
    case servedStaleOnError(URL)
    /// Offline mode: a stored response was served without contacting the server.
    case servedOffline(URL)
    /// Offline mode, and nothing usable was stored: the request failed.
    case offlineMiss(URL)
    /// A response could not be stored (the folder is full or read-only, the body is larger than
    /// a record may be); it was still delivered.
    case storeFailed(URL, CacheError)
    /// An unsafe request (POST, PUT, PATCH, DELETE, …) succeeded, so the stored response for its
    /// URL was removed (RFC 9111 §4.4).
    case invalidated(URL)

    public var description: String {
        switch self {
        case .hit(let url): return "hit: served from the cache without asking the server (\(url.absoluteString))"
        case .miss(let url): return "miss: nothing usable stored, asking the server (\(url.absoluteString))"
        case .revalidated(let url): return "revalidated: the server answered 304, the stored body was served (\(url.absoluteString))"
        case .stored(let url): return "stored the response as it streamed through (\(url.absoluteString))"
        case .servedStaleOnError(let url): return "the server or the network failed: served the stale response (stale-if-error) (\(url.absoluteString))"
        case .servedOffline(let url): return "offline: served the stored response (\(url.absoluteString))"
        case .offlineMiss(let url): return "offline and nothing usable stored (\(url.absoluteString))"
        case .storeFailed(let url, let error): return "could not store the response for \(url.absoluteString): \(error)"
        case .invalidated(let url): return "removed the stored response after an unsafe request (\(url.absoluteString))"
        }
    }
}
