import Foundation

/// Why ``TransitClientTransport`` could not send an operation or deliver its response.
///
/// Thrown from the transport (a generated client wraps it in `ClientError`, whose
/// `underlyingError` it is); errors of Transit's client (``Transit/TransportError``,
/// ``Transit/ResponseTooLargeError``, ``Transit/URLRequestError``…) are thrown as they are.
public enum TransitOpenAPIError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError {
    /// The request body is longer than ``TransitClientTransport/Configuration/maxRequestBodyBytes``:
    /// nothing was sent, and nothing of the body is left on disk.
    case requestBodyTooLarge(limit: Int64)
    /// The streamed response body arrived faster than the operation read it, and more than
    /// ``TransitClientTransport/Configuration/streamBufferBytes`` piled up: the transfer was
    /// cancelled rather than buffered without bound or thinned out.
    case consumerFellBehind(bufferLimit: Int)
    /// The base URL and the operation's path do not make a URL.
    case invalidURL(baseURL: String, path: String)
    /// The response's status code cannot be represented (it is not three digits).
    case invalidStatusCode(Int)
    /// The streamed response ended before its head arrived.
    case missingResponseHead

    /// What went wrong, and what to do about it.
    public var description: String {
        switch self {
        case .requestBodyTooLarge(let limit):
            return "The request body is longer than the limit of \(limit) bytes: nothing was sent. Raise maxRequestBodyBytes or send a smaller body."
        case .consumerFellBehind(let limit):
            return "The streamed response body piled up past \(limit) bytes because it was read more slowly than it arrived: the transfer was cancelled. Read the body as it arrives, or raise streamBufferBytes."
        case .invalidURL(let baseURL, let path):
            return "The server URL \(baseURL) and the path \(path) do not make a valid URL."
        case .invalidStatusCode(let code):
            return "The response status \(code) is not a three-digit HTTP status code."
        case .missingResponseHead:
            return "The response ended before its status and header fields arrived."
        }
    }

    /// The same as ``description``.
    public var errorDescription: String? { description }
}
