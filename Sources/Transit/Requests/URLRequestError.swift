import Foundation

/// A request that cannot be sent as asked: thrown by the fluent `URLRequest` helpers when they
/// are given input they refuse, or found by ``HTTPClient`` in the final request (a header or
/// method set by other means, a request without a URL).
///
/// Either way the request's signal fails with it and nothing is sent.
/// Header names and values are checked because Foundation does not check them reliably: on
/// Linux it silently drops a value with a line break, and a value that reached the wire with one
/// could inject headers of its own.
public enum URLRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The header name is not an RFC 9110 token (it is empty, or has a space, a colon, a line
    /// break or another separator).
    case invalidHeaderName(String)
    /// The value of header `name` contains a control character such as CR, LF or NUL. The value
    /// itself is not kept, so a secret in it cannot leak into logs.
    case invalidHeaderValue(name: String)
    /// The bearer token is empty or contains whitespace or a control character.
    case invalidBearerToken
    /// The method is not an RFC 9110 token (empty, or with a space or a separator).
    case invalidMethod(String)
    /// The timeout is not a finite number of seconds above zero.
    case invalidTimeout(Double)
    /// The request has no valid URL: it has none, or query items could not be added to it.
    case invalidURL

    public var description: String {
        switch self {
        case .invalidHeaderName(let name):
            return "Invalid HTTP header name \(name.debugDescription): a header name must be a non-empty token "
                + "(letters, digits and !#$%&'*+-.^_`|~; no spaces, colons or line breaks)."
        case .invalidHeaderValue(let name):
            return "Invalid value for HTTP header \(name.debugDescription): it contains a control character "
                + "(CR, LF, NUL, …), which could inject headers. Remove line breaks from header values."
        case .invalidBearerToken:
            return "Invalid bearer token: it is empty or contains whitespace or a control character "
                + "(a token read from a file often ends with a newline; trim it)."
        case .invalidMethod(let method):
            return "Invalid HTTP method \(method.debugDescription): a method must be a non-empty token with no spaces or separators."
        case .invalidTimeout(let seconds):
            return "Invalid timeout \(seconds): a timeout must be a finite number of seconds above zero."
        case .invalidURL:
            return "The request has no valid URL, so it cannot be sent or have query items added."
        }
    }
}

extension URLRequestError: LocalizedError {
    public var errorDescription: String? { description }
}
