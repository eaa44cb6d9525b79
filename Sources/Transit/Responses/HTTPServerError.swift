import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP server error: a response with a status code from 500 to 599.
///
/// Every code has a case; codes without a case of their own (509, 520, …) use ``other(statusCode:response:)``.
/// Errors compare equal by status code alone, so `tryCatch(HTTPServerError.internalServerError())` matches
/// any 500, whatever its headers or body. The response, when known, gives access to headers and body.
public enum HTTPServerError: HTTPError, Hashable, StatusCodeError {
    /// 500 Internal Server Error.
    case internalServerError(response: HTTPResponse? = nil)
    /// 501 Not Implemented.
    case notImplemented(response: HTTPResponse? = nil)
    /// 502 Bad Gateway.
    case badGateway(response: HTTPResponse? = nil)
    /// 503 Service Unavailable. `retryAfter` is the parsed Retry-After header, if the server sent a valid one.
    case serviceUnavailable(retryAfter: Duration? = nil, response: HTTPResponse? = nil)
    /// 504 Gateway Timeout.
    case gatewayTimeout(response: HTTPResponse? = nil)
    /// 505 HTTP Version Not Supported.
    case httpVersionNotSupported(response: HTTPResponse? = nil)
    /// 506 Variant Also Negotiates.
    case variantAlsoNegotiates(response: HTTPResponse? = nil)
    /// 507 Insufficient Storage.
    case insufficientStorage(response: HTTPResponse? = nil)
    /// 508 Loop Detected.
    case loopDetected(response: HTTPResponse? = nil)
    /// 510 Not Extended.
    case notExtended(response: HTTPResponse? = nil)
    /// 511 Network Authentication Required.
    case networkAuthenticationRequired(response: HTTPResponse? = nil)
    /// Any other status code from 500 to 599 (and, from `catchHTTPErrors()`, any code
    /// of 600 or above).
    case other(statusCode: Int, response: HTTPResponse? = nil)

    /// Creates the error for `statusCode`, or `nil` if the code is not from 500 to 599.
    public init?(statusCode: Int, response: HTTPResponse? = nil) {
        guard (500...599).contains(statusCode) else { return nil }
        self = Self.named[statusCode]?(response) ?? .other(statusCode: statusCode, response: response)
    }

    /// The case of each named code: the one place that maps codes to cases. (The way back,
    /// case to code, is ``parts``: reading an enum's case takes a `switch`.)
    private static let named: [Int: @Sendable (HTTPResponse?) -> HTTPServerError] = [
        500: { .internalServerError(response: $0) },
        501: { .notImplemented(response: $0) },
        502: { .badGateway(response: $0) },
        503: { .serviceUnavailable(retryAfter: RetryAfter.delay(in: $0), response: $0) },
        504: { .gatewayTimeout(response: $0) },
        505: { .httpVersionNotSupported(response: $0) },
        506: { .variantAlsoNegotiates(response: $0) },
        507: { .insufficientStorage(response: $0) },
        508: { .loopDetected(response: $0) },
        510: { .notExtended(response: $0) },
        511: { .networkAuthenticationRequired(response: $0) },
    ]

    /// The `Retry-After` of ``HTTPServerError/serviceUnavailable(retryAfter:response:)``; `nil` for
    /// every other case.
    public var retryAfter: Duration? {
        if case .serviceUnavailable(let retryAfter, _) = self { return retryAfter }
        return nil
    }

    /// The status code and the response of the case.
    var parts: (statusCode: Int, response: HTTPResponse?) {
        switch self {
        case .internalServerError(let response): (500, response)
        case .notImplemented(let response): (501, response)
        case .badGateway(let response): (502, response)
        case .serviceUnavailable(_, let response): (503, response)
        case .gatewayTimeout(let response): (504, response)
        case .httpVersionNotSupported(let response): (505, response)
        case .variantAlsoNegotiates(let response): (506, response)
        case .insufficientStorage(let response): (507, response)
        case .loopDetected(let response): (508, response)
        case .notExtended(let response): (510, response)
        case .networkAuthenticationRequired(let response): (511, response)
        case .other(let statusCode, let response): (statusCode, response)
        }
    }
}
