import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response whose status code is 400 or above, turned into an error by
/// `Signal.catchHTTPErrors()`.
///
/// ``HTTPClientError`` (4xx) and ``HTTPServerError`` (5xx) conform. The error keeps the response,
/// so the caller can read the headers and the body the server sent with it.
public protocol HTTPError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The HTTP status code, 400 or above.
    var statusCode: Int { get }
    /// The response that carried the status, when known.
    var response: HTTPResponse? { get }
    /// The standard name of the status code ("Not Found").
    var reasonPhrase: String { get }
    /// How long the server asked the client to wait before retrying (its `Retry-After`
    /// header), carried by 429 Too Many Requests and 503 Service Unavailable; `nil` for other
    /// codes or when the header is absent or unreadable.
    var retryAfter: Duration? { get }
}

extension HTTPError {
    /// The standard reason phrase of the code ("Not Found", "Bad Gateway"); for a code without
    /// one, Foundation's name for it.
    public var reasonPhrase: String { HTTPStatus.reasonPhrase(statusCode) }

    /// `nil`: an error that carries a `Retry-After` (``HTTPClientError`` and ``HTTPServerError``
    /// do) implements the requirement itself.
    public var retryAfter: Duration? { nil }
}

/// ``HTTPClientError`` and ``HTTPServerError``: each case holds its status code (named by the case,
/// or given to `other`) and its response, read through `parts`; two errors are equal, and hash
/// alike, when their status codes are, whatever their responses; and they describe themselves
/// (`description`, `errorDescription`) the same way.
protocol StatusCodeError: HTTPError, Hashable, DescribedError {
    /// The status code and the response of the case.
    var parts: (statusCode: Int, response: HTTPResponse?) { get }
}

extension StatusCodeError {
    /// The status code of the case.
    public var statusCode: Int { parts.statusCode }

    /// The response the case carries, when known.
    public var response: HTTPResponse? { parts.response }

    /// Equal when the status codes are, whatever the responses.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.statusCode == rhs.statusCode
    }

    /// Hashes the status code alone.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(statusCode)
    }

    /// `HTTP <code> <reason> for <METHOD> <URL>`, then the Retry-After the server asked for and
    /// the start of the body, when known: enough to tell what failed without a debugger. The URL
    /// is redacted (no user-info, no secret query values: see ``Redaction``).
    public var description: String {
        var text = "HTTP \(statusCode) \(reasonPhrase)"
        if let request = response?.request, let url = request.url {
            text += " for \(request.httpMethod ?? "GET") \(url.redactedForLogging)"
        }
        if let retryAfter {
            if retryAfter >= RetryAfter.longest {
                text += " (retry after: longer than any wait)"
            } else {
                let (whole, attoseconds) = max(retryAfter, .zero).components
                let seconds = attoseconds == 0 ? "\(whole)" : "\(Double(whole) + Double(attoseconds) / 1e18)"
                text += " (retry after \(seconds) s)"
            }
        }
        if let body = response?.text, !body.isEmpty {
            let excerpt = body.count > 200 ? String(body.prefix(200)) + "…" : body
            text += ": \(excerpt)"
        }
        return text
    }
}

/// Turns a status code of 400 or above into the matching ``HTTPError``; `nil` below 400.
package func makeHTTPError(for response: HTTPResponse) -> (any HTTPError)? {
    HTTPClientError(statusCode: response.statusCode, response: response)
        ?? HTTPServerError(statusCode: response.statusCode, response: response)
        ?? (response.statusCode >= 600 ? HTTPServerError.other(statusCode: response.statusCode, response: response) : nil)
}

