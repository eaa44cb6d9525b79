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
    public let key: @Sendable (URLRequest) -> String

    /// A key made by `key`.
    public init(_ key: @escaping @Sendable (URLRequest) -> String) {
        self.key = key
    }

    /// Scheme, host, port and first path segment (the default).
    public static let originAndFirstSegment = RequestKey { request in
        guard let url = request.url else { return "" }
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let first = url.path.split(separator: "/", omittingEmptySubsequences: true).first.map { "/\($0)" } ?? "/"
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)\(first)"
    }

    /// Scheme, host and port: one key per origin.
    public static let origin = RequestKey { request in
        guard let url = request.url else { return "" }
        let scheme = url.scheme?.lowercased() ?? ""
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }
}
