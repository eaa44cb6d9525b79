import Foundation

/// A response larger than the limit the request was allowed to buffer.
///
/// Thrown (before the body is read) when the response's `Content-Length` exceeds the limit, or as
/// soon as the received bytes do; the transfer is cancelled at once. Raise the limit for one
/// request with ``RequestOptions/maxResponseBytes``, for every request with
/// `HTTPClient.init(maxResponseBytes:)`,
/// or stream the body instead of buffering it (``HTTPClient/stream(_:bodyFile:options:)``,
/// ``HTTPClient/download(_:to:options:)``).
public struct ResponseTooLargeError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The limit, in bytes.
    public let limit: Int
    /// The size the server announced in `Content-Length`, if that is what exceeded the limit.
    public let declaredLength: Int64?

    /// Creates the error.
    package init(limit: Int, declaredLength: Int64? = nil) {
        self.limit = limit
        self.declaredLength = declaredLength
    }

    public var description: String {
        let what = declaredLength.map { "announces \($0) bytes (Content-Length)" } ?? "is larger"
        return "The response body \(what), more than the limit of \(limit) bytes, so it was not read. "
            + "Raise the limit (RequestOptions.maxResponseBytes or HTTPClient's maxResponseBytes) "
            + "or stream the body (stream, download)."
    }
}
