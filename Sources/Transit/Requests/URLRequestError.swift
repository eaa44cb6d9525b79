import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request that cannot be sent as asked: thrown by the fluent `URLRequest` helpers when they
/// are given input they refuse, or found by ``HTTPClient`` in the final request (a header or
/// method set by other means, a request without a URL).
///
/// Either way the request's signal fails with it and nothing is sent.
/// Header names and values are checked because Foundation does not check them reliably: on
/// Linux it silently drops a value with a line break, and a value that reached the wire with one
/// could inject headers of its own.
public enum URLRequestError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The header name is not an RFC 9110 token (it is empty, or has a space, a colon, a line
    /// break or another separator).
    case invalidHeaderName(String)
    /// The value of header `name` contains a control character such as CR, LF or NUL. The value
    /// itself is not kept, so a secret in it cannot leak into logs.
    case invalidHeaderValue(name: String)
    /// The bearer token is empty or contains whitespace or a control character.
    case invalidBearerToken
    /// The user name of Basic credentials contains a colon, which RFC 7617 §2 forbids: the
    /// server splits `user:password` at the first colon, so it would read another user name and
    /// password. (The password may contain colons.)
    case colonInBasicUsername
    /// The user name of Basic credentials contains a control character (U+0000–U+001F,
    /// U+007F–U+009F), which RFC 7617 §2 forbids. The user name is not kept in the error.
    case controlCharacterInBasicUsername
    /// The password of Basic credentials contains a control character (U+0000–U+001F,
    /// U+007F–U+009F), which RFC 7617 §2 forbids. The password is not kept in the error.
    case controlCharacterInBasicPassword
    /// The method is not an RFC 9110 token (empty, or with a space or a separator).
    case invalidMethod(String)
    /// The timeout (`URLRequest.timeoutInterval`, or the argument of
    /// `withTimeout(_:)`) is not a finite number of seconds above zero and at most
    /// 1,000,000,000 (about 31 years). Foundation on Linux converts the
    /// timeout to whole milliseconds and traps on a value it cannot convert.
    case invalidTimeout(Double)
    /// The request has no valid URL: it has none, or query items could not be added to it.
    case invalidURL
    /// The URL is not one Transit sends: it is not `http` or `https`, or it has no host. The URL
    /// is kept redacted (see ``Redaction``).
    case unsupportedURL(String)
    /// The URL carries user-info (`https://user:password@host/…`), which transports treat
    /// differently (one sends it as Basic credentials, another drops it). Send credentials with
    /// an ``Authorizer`` or an `Authorization` header instead. The URL is kept redacted: the
    /// user-info is `***`, so neither the user name nor the password is in the error.
    case credentialsInURL(String)
    /// The request has an `httpBodyStream`. A stream can be read once, so a retry or a redirect
    /// could not send it again, and not every transport reads it: give the body as `httpBody`
    /// or as a body file.
    case bodyStreamNotSupported

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
        case .colonInBasicUsername:
            return "Invalid user name for Basic authorization: it contains ':', which separates the user name from the "
                + "password (RFC 7617), so the server would read a different user. Use a user name without ':'."
        case .controlCharacterInBasicUsername:
            return "Invalid user name for Basic authorization: it contains a control character (CR, LF, NUL, …), which "
                + "RFC 7617 forbids (a user name read from a file often ends with a newline; trim it)."
        case .controlCharacterInBasicPassword:
            return "Invalid password for Basic authorization: it contains a control character (CR, LF, NUL, …), which "
                + "RFC 7617 forbids (a password read from a file often ends with a newline; trim it)."
        case .invalidMethod(let method):
            return "Invalid HTTP method \(method.debugDescription): a method must be a non-empty token with no spaces or separators."
        case .invalidTimeout(let seconds):
            return "Invalid timeout \(seconds): a timeout must be a finite number of seconds above zero and at most "
                + "\(Int(URLRequest.maximumTimeoutInterval)); use a deadline (RequestOptions) for a total time limit."
        case .invalidURL:
            return "The request has no valid URL, so it cannot be sent or have query items added."
        case .unsupportedURL(let url):
            return "Unsupported URL \(url.debugDescription): Transit sends http and https URLs with a host only."
        case .credentialsInURL(let url):
            return "The URL \(url.debugDescription) carries user-info (a user name or password before '@'), which is "
                + "not sent: transports treat it differently. Remove it from the URL and send credentials with an "
                + "authoriser (HTTPClient.Configuration.authorizer) or an Authorization header instead."
        case .bodyStreamNotSupported:
            return "The request has an httpBodyStream, which is not sent: a stream can be read only once (a retry or a "
                + "redirect could not send it again). Give the body as httpBody or as a body file."
        }
    }
}
