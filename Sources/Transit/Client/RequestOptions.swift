/// Settings of one request that override its ``HTTPClient``'s.
///
/// Every property left `nil` takes the client's value.
///
/// ```swift
/// api.get(endpoint: "export", options: RequestOptions(maxResponseBytes: 256 << 20, deadline: .after(.seconds(600))))
/// ```
public struct RequestOptions: Sendable, Hashable {
    /// The most body bytes a buffered response may have (``HTTPClient/Configuration/maxResponseBytes``).
    /// Streams and downloads are not limited unless this is set.
    public var maxResponseBytes: Int?
    /// The total time the request may take, redirects included (``HTTPClient/Configuration/deadline``).
    public var deadline: Deadline?
    /// Which redirects to follow (``HTTPClient/Configuration/redirectPolicy``).
    public var redirectPolicy: RedirectPolicy?
    /// A low-cardinality name of what the request does (an OpenAPI operation id such as
    /// `listPosts`), reported by every ``HTTPEvent`` of the request as
    /// ``HTTPEvent/operationName``, for metrics and traces to group by. Never a URL or an
    /// identifier that varies per request. None by default.
    public var operationName: String?

    /// Creates options; `nil` means "the client's" (or, for `operationName`, none).
    public init(
        maxResponseBytes: Int? = nil, deadline: Deadline? = nil, redirectPolicy: RedirectPolicy? = nil, operationName: String? = nil
    ) {
        self.maxResponseBytes = maxResponseBytes
        self.deadline = deadline
        self.redirectPolicy = redirectPolicy
        self.operationName = operationName
    }
}

/// The total time a request may take, from subscription to its last byte, redirects included.
///
/// Unlike an idle timeout (`URLRequest.timeoutInterval`, which restarts with every byte), a
/// deadline cannot be stretched by a server that trickles a byte at a time. When it passes, the
/// transfer is cancelled and the request fails with `URLError(.timedOut)` (inside a
/// ``TransportError`` when sent through an ``HTTPClient``).
public enum Deadline: Sendable, Hashable {
    /// The request must end within this time.
    case after(Duration)
    /// No total deadline (an idle timeout still applies).
    case unlimited

    var duration: Duration? {
        if case .after(let duration) = self { return duration }
        return nil
    }
}
