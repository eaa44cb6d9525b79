import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP client error: a response with a status code from 400 to 499.
///
/// Every code has a case; codes without a case of their own (418, 425, …) use ``other(statusCode:response:)``.
/// Errors compare equal by status code alone, so `tryCatch(HTTPClientError.badRequest())` matches
/// any 400, whatever its headers or body. The response, when known, gives access to headers and body.
public enum HTTPClientError: HTTPError, Hashable, StatusCodeError {
    /// 400 Bad Request.
    case badRequest(response: HTTPResponse? = nil)
    /// 401 Unauthorized.
    case unauthorized(response: HTTPResponse? = nil)
    /// 402 Payment Required.
    case paymentRequired(response: HTTPResponse? = nil)
    /// 403 Forbidden.
    case forbidden(response: HTTPResponse? = nil)
    /// 404 Not Found.
    case notFound(response: HTTPResponse? = nil)
    /// 405 Method Not Allowed.
    case methodNotAllowed(response: HTTPResponse? = nil)
    /// 406 Not Acceptable.
    case notAcceptable(response: HTTPResponse? = nil)
    /// 407 Proxy Authentication Required.
    case proxyAuthenticationRequired(response: HTTPResponse? = nil)
    /// 408 Request Timeout.
    case requestTimeout(response: HTTPResponse? = nil)
    /// 409 Conflict.
    case conflict(response: HTTPResponse? = nil)
    /// 410 Gone.
    case gone(response: HTTPResponse? = nil)
    /// 411 Length Required.
    case lengthRequired(response: HTTPResponse? = nil)
    /// 412 Precondition Failed.
    case preconditionFailed(response: HTTPResponse? = nil)
    /// 413 Content Too Large.
    case contentTooLarge(response: HTTPResponse? = nil)
    /// 414 URI Too Long.
    case uriTooLong(response: HTTPResponse? = nil)
    /// 415 Unsupported Media Type.
    case unsupportedMediaType(response: HTTPResponse? = nil)
    /// 416 Range Not Satisfiable.
    case rangeNotSatisfiable(response: HTTPResponse? = nil)
    /// 417 Expectation Failed.
    case expectationFailed(response: HTTPResponse? = nil)
    /// 421 Misdirected Request.
    case misdirectedRequest(response: HTTPResponse? = nil)
    /// 422 Unprocessable Content.
    case unprocessableContent(response: HTTPResponse? = nil)
    /// 423 Locked.
    case locked(response: HTTPResponse? = nil)
    /// 424 Failed Dependency.
    case failedDependency(response: HTTPResponse? = nil)
    /// 426 Upgrade Required.
    case upgradeRequired(response: HTTPResponse? = nil)
    /// 428 Precondition Required.
    case preconditionRequired(response: HTTPResponse? = nil)
    /// 429 Too Many Requests. `retryAfter` is the parsed Retry-After header, if the server sent a valid one.
    case tooManyRequests(retryAfter: Duration? = nil, response: HTTPResponse? = nil)
    /// 431 Request Header Fields Too Large.
    case requestHeaderFieldsTooLarge(response: HTTPResponse? = nil)
    /// 451 Unavailable For Legal Reasons.
    case unavailableForLegalReasons(response: HTTPResponse? = nil)
    /// Any other status code from 400 to 499.
    case other(statusCode: Int, response: HTTPResponse? = nil)

    /// Creates the error for `statusCode`, or `nil` if the code is not from 400 to 499.
    public init?(statusCode: Int, response: HTTPResponse? = nil) {
        guard (400...499).contains(statusCode) else { return nil }
        self = Self.named[statusCode]?(response) ?? .other(statusCode: statusCode, response: response)
    }

    /// The case of each named code: the one place that maps codes to cases. (The way back,
    /// case to code, is ``parts``: reading an enum's case takes a `switch`.)
    private static let named: [Int: @Sendable (HTTPResponse?) -> HTTPClientError] = [
        400: { .badRequest(response: $0) },
        401: { .unauthorized(response: $0) },
        402: { .paymentRequired(response: $0) },
        403: { .forbidden(response: $0) },
        404: { .notFound(response: $0) },
        405: { .methodNotAllowed(response: $0) },
        406: { .notAcceptable(response: $0) },
        407: { .proxyAuthenticationRequired(response: $0) },
        408: { .requestTimeout(response: $0) },
        409: { .conflict(response: $0) },
        410: { .gone(response: $0) },
        411: { .lengthRequired(response: $0) },
        412: { .preconditionFailed(response: $0) },
        413: { .contentTooLarge(response: $0) },
        414: { .uriTooLong(response: $0) },
        415: { .unsupportedMediaType(response: $0) },
        416: { .rangeNotSatisfiable(response: $0) },
        417: { .expectationFailed(response: $0) },
        421: { .misdirectedRequest(response: $0) },
        422: { .unprocessableContent(response: $0) },
        423: { .locked(response: $0) },
        424: { .failedDependency(response: $0) },
        426: { .upgradeRequired(response: $0) },
        428: { .preconditionRequired(response: $0) },
        429: { .tooManyRequests(retryAfter: RetryAfter.delay(in: $0), response: $0) },
        431: { .requestHeaderFieldsTooLarge(response: $0) },
        451: { .unavailableForLegalReasons(response: $0) },
    ]

    /// The `Retry-After` of ``HTTPClientError/tooManyRequests(retryAfter:response:)``; `nil` for
    /// every other case.
    public var retryAfter: Duration? {
        if case .tooManyRequests(let retryAfter, _) = self { return retryAfter }
        return nil
    }

    /// The status code and the response of the case.
    var parts: (statusCode: Int, response: HTTPResponse?) {
        switch self {
        case .badRequest(let response): (400, response)
        case .unauthorized(let response): (401, response)
        case .paymentRequired(let response): (402, response)
        case .forbidden(let response): (403, response)
        case .notFound(let response): (404, response)
        case .methodNotAllowed(let response): (405, response)
        case .notAcceptable(let response): (406, response)
        case .proxyAuthenticationRequired(let response): (407, response)
        case .requestTimeout(let response): (408, response)
        case .conflict(let response): (409, response)
        case .gone(let response): (410, response)
        case .lengthRequired(let response): (411, response)
        case .preconditionFailed(let response): (412, response)
        case .contentTooLarge(let response): (413, response)
        case .uriTooLong(let response): (414, response)
        case .unsupportedMediaType(let response): (415, response)
        case .rangeNotSatisfiable(let response): (416, response)
        case .expectationFailed(let response): (417, response)
        case .misdirectedRequest(let response): (421, response)
        case .unprocessableContent(let response): (422, response)
        case .locked(let response): (423, response)
        case .failedDependency(let response): (424, response)
        case .upgradeRequired(let response): (426, response)
        case .preconditionRequired(let response): (428, response)
        case .tooManyRequests(_, let response): (429, response)
        case .requestHeaderFieldsTooLarge(let response): (431, response)
        case .unavailableForLegalReasons(let response): (451, response)
        case .other(let statusCode, let response): (statusCode, response)
        }
    }
}
