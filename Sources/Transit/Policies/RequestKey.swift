import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client's shared policies (rate limits, cooldowns) group requests by.
///
/// By default a key is scheme + host + port + the first path segment
/// (`https://api.example.com:443/v1`), so two services behind one gateway (`/v1`, `/search`) are
/// limited and cooled down separately — SPTDataLoader keys on the host alone. Give any function
/// of the request to group otherwise.
public struct RequestKey: Sendable {
    /// The key of `request`; requests with equal keys share a rate limit and a cooldown.
    let key: @Sendable (URLRequest) -> String
    /// Which built-in key this is (`nil` for a key made from a function), so that a client whose
    /// rate limiter and cooldowns group alike computes the key once per request.
    let builtIn: BuiltIn?

    /// The built-in keys.
    enum BuiltIn: Equatable {
        case originAndFirstSegment, origin
    }

    /// A key made by `key`: requests for which it returns equal strings share a rate limit and a
    /// cooldown.
    public init(_ key: @escaping @Sendable (URLRequest) -> String) {
        self.key = key
        builtIn = nil
    }

    private init(_ builtIn: BuiltIn, _ key: @escaping @Sendable (URLRequest) -> String) {
        self.key = key
        self.builtIn = builtIn
    }

    /// Whether `other` is the same built-in key, so gives the same key for every request.
    func isSame(as other: RequestKey) -> Bool {
        builtIn != nil && builtIn == other.builtIn
    }

    /// Scheme, host, port and first path segment (the default).
    ///
    /// The scheme and host are lowercased and the port made explicit (443 for `https`, 80 for
    /// other schemes). Plain URLs are read in one scan of their bytes (see `URLOrigin`), others
    /// by Foundation, with the same result.
    public static let originAndFirstSegment = RequestKey(.originAndFirstSegment) { request in
        guard let url = request.url else { return "" }
        return URLOrigin.key(url)
    }

    /// The first non-empty segment of `path` (`v1` of `//v1/users`), found without splitting the
    /// whole path: every request of a client with a rate limit or cooldowns computes it.
    static func firstSegment(of path: String) -> Substring {
        let utf8 = path.utf8
        guard let start = utf8.firstIndex(where: { $0 != UInt8(ascii: "/") }) else { return "" }
        let end = utf8[start...].firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
        return path[start..<end]
    }

    /// Scheme, host and port: one key per origin.
    public static let origin = RequestKey(.origin) { request in
        guard let url = request.url else { return "" }
        return URLOrigin.origin(url)
    }
}
