import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP client error: a response with a status code from 400 to 499.
///
/// Every code has a case; codes without a name in RFC 9110 (418, 425, …) use ``other(statusCode:response:)``.
/// Errors compare equal by status code alone, so `tryCatch(HTTPClientError.badRequest())` matches
/// any 400, whatever its headers or body. The response, when known, gives access to headers and body.
public enum HTTPClientError: HTTPError, Hashable {
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
        switch statusCode {
        case 400: self = .badRequest(response: response)
        case 401: self = .unauthorized(response: response)
        case 402: self = .paymentRequired(response: response)
        case 403: self = .forbidden(response: response)
        case 404: self = .notFound(response: response)
        case 405: self = .methodNotAllowed(response: response)
        case 406: self = .notAcceptable(response: response)
        case 407: self = .proxyAuthenticationRequired(response: response)
        case 408: self = .requestTimeout(response: response)
        case 409: self = .conflict(response: response)
        case 410: self = .gone(response: response)
        case 411: self = .lengthRequired(response: response)
        case 412: self = .preconditionFailed(response: response)
        case 413: self = .contentTooLarge(response: response)
        case 414: self = .uriTooLong(response: response)
        case 415: self = .unsupportedMediaType(response: response)
        case 416: self = .rangeNotSatisfiable(response: response)
        case 417: self = .expectationFailed(response: response)
        case 421: self = .misdirectedRequest(response: response)
        case 422: self = .unprocessableContent(response: response)
        case 423: self = .locked(response: response)
        case 424: self = .failedDependency(response: response)
        case 426: self = .upgradeRequired(response: response)
        case 428: self = .preconditionRequired(response: response)
        case 429: self = .tooManyRequests(retryAfter: RetryAfter.delay(in: response), response: response)
        case 431: self = .requestHeaderFieldsTooLarge(response: response)
        case 451: self = .unavailableForLegalReasons(response: response)
        case 400...499: self = .other(statusCode: statusCode, response: response)
        default: return nil
        }
    }

    public var statusCode: Int {
        switch self {
        case .badRequest: return 400
        case .unauthorized: return 401
        case .paymentRequired: return 402
        case .forbidden: return 403
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .notAcceptable: return 406
        case .proxyAuthenticationRequired: return 407
        case .requestTimeout: return 408
        case .conflict: return 409
        case .gone: return 410
        case .lengthRequired: return 411
        case .preconditionFailed: return 412
        case .contentTooLarge: return 413
        case .uriTooLong: return 414
        case .unsupportedMediaType: return 415
        case .rangeNotSatisfiable: return 416
        case .expectationFailed: return 417
        case .misdirectedRequest: return 421
        case .unprocessableContent: return 422
        case .locked: return 423
        case .failedDependency: return 424
        case .upgradeRequired: return 426
        case .preconditionRequired: return 428
        case .tooManyRequests: return 429
        case .requestHeaderFieldsTooLarge: return 431
        case .unavailableForLegalReasons: return 451
        case .other(let statusCode, _): return statusCode
        }
    }

    public var response: HTTPResponse? {
        switch self {
        case .badRequest(let response): return response
        case .unauthorized(let response): return response
        case .paymentRequired(let response): return response
        case .forbidden(let response): return response
        case .notFound(let response): return response
        case .methodNotAllowed(let response): return response
        case .notAcceptable(let response): return response
        case .proxyAuthenticationRequired(let response): return response
        case .requestTimeout(let response): return response
        case .conflict(let response): return response
        case .gone(let response): return response
        case .lengthRequired(let response): return response
        case .preconditionFailed(let response): return response
        case .contentTooLarge(let response): return response
        case .uriTooLong(let response): return response
        case .unsupportedMediaType(let response): return response
        case .rangeNotSatisfiable(let response): return response
        case .expectationFailed(let response): return response
        case .misdirectedRequest(let response): return response
        case .unprocessableContent(let response): return response
        case .locked(let response): return response
        case .failedDependency(let response): return response
        case .upgradeRequired(let response): return response
        case .preconditionRequired(let response): return response
        case .tooManyRequests(_, let response): return response
        case .requestHeaderFieldsTooLarge(let response): return response
        case .unavailableForLegalReasons(let response): return response
        case .other(_, let response): return response
        }
    }

    public var reasonPhrase: String {
        switch self {
        case .badRequest: return "Bad Request"
        case .unauthorized: return "Unauthorized"
        case .paymentRequired: return "Payment Required"
        case .forbidden: return "Forbidden"
        case .notFound: return "Not Found"
        case .methodNotAllowed: return "Method Not Allowed"
        case .notAcceptable: return "Not Acceptable"
        case .proxyAuthenticationRequired: return "Proxy Authentication Required"
        case .requestTimeout: return "Request Timeout"
        case .conflict: return "Conflict"
        case .gone: return "Gone"
        case .lengthRequired: return "Length Required"
        case .preconditionFailed: return "Precondition Failed"
        case .contentTooLarge: return "Content Too Large"
        case .uriTooLong: return "URI Too Long"
        case .unsupportedMediaType: return "Unsupported Media Type"
        case .rangeNotSatisfiable: return "Range Not Satisfiable"
        case .expectationFailed: return "Expectation Failed"
        case .misdirectedRequest: return "Misdirected Request"
        case .unprocessableContent: return "Unprocessable Content"
        case .locked: return "Locked"
        case .failedDependency: return "Failed Dependency"
        case .upgradeRequired: return "Upgrade Required"
        case .preconditionRequired: return "Precondition Required"
        case .tooManyRequests: return "Too Many Requests"
        case .requestHeaderFieldsTooLarge: return "Request Header Fields Too Large"
        case .unavailableForLegalReasons: return "Unavailable For Legal Reasons"
        case .other(let statusCode, _): return HTTPURLResponse.localizedString(forStatusCode: statusCode)
        }
    }

    /// The parsed `Retry-After` of a 429; `nil` for every other case.
    public var retryAfter: Duration? {
        if case .tooManyRequests(let retryAfter, _) = self { return retryAfter }
        return nil
    }

    /// The error for a 429 whose Retry-After is given in seconds (NaN and negative values are
    /// zero, values too large are ``RetryAfter/longest``).
    static func tooManyRequests(retryAfter seconds: TimeInterval?, response: HTTPResponse? = nil) -> Self {
        .tooManyRequests(retryAfter: seconds.map(RetryAfter.duration(seconds:)), response: response)
    }

    public static func == (lhs: HTTPClientError, rhs: HTTPClientError) -> Bool {
        lhs.statusCode == rhs.statusCode
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(statusCode)
    }
}
