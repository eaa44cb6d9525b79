/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's name as sent on the wire, upper-cased.
    public let rawValue: String

    /// Creates a method from its name; the name is upper-cased.
    public init(rawValue: String) {
        self.rawValue = rawValue.uppercased()
    }

    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    public static let get: HTTPMethod = "GET"
    public static let head: HTTPMethod = "HEAD"
    public static let post: HTTPMethod = "POST"
    public static let put: HTTPMethod = "PUT"
    public static let patch: HTTPMethod = "PATCH"
    public static let delete: HTTPMethod = "DELETE"
    public static let options: HTTPMethod = "OPTIONS"
    // No constant for TRACE: the server echoes the request back, credentials included (cross-site
    // tracing), so it is spelled out where it is meant: `HTTPMethod("TRACE")`.

    /// `true` for the methods RFC 9110 defines as idempotent (GET, HEAD, PUT, DELETE, OPTIONS,
    /// TRACE): sending them twice has the same effect as sending them once, so they may be
    /// retried safely. What users read of it is `RetryPolicy().retryableMethods`, these methods.
    package var isIdempotent: Bool {
        switch self {
        case .get, .head, .put, .delete, .options, "TRACE": return true
        default: return false
        }
    }

    public var description: String { rawValue }
}
