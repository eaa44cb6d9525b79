import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP server error: a response with a status code from 500 to 599.
///
/// Every code has a case; codes without a name in RFC 9110 (418, 425, …) use ``other(statusCode:response:)``.
/// Errors compare equal by status code alone, so `tryCatch(HTTPServerError.internalServerError())` matches
/// any 500, whatever its headers or body. The response, when known, gives access to headers and body.
public enum HTTPServerError: HTTPError, Hashable {
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
    /// Any other status code from 500 to 599.
    case other(statusCode: Int, response: HTTPResponse? = nil)

    /// Creates the error for `statusCode`, or `nil` if the code is not from 500 to 599.
    public init?(statusCode: Int, response: HTTPResponse? = nil) {
        switch statusCode {
        case 500: self = .internalServerError(response: response)
        case 501: self = .notImplemented(response: response)
        case 502: self = .badGateway(response: response)
        case 503: self = .serviceUnavailable(retryAfter: RetryAfter.delay(in: response), response: response)
        case 504: self = .gatewayTimeout(response: response)
        case 505: self = .httpVersionNotSupported(response: response)
        case 506: self = .variantAlsoNegotiates(response: response)
        case 507: self = .insufficientStorage(response: response)
        case 508: self = .loopDetected(response: response)
        case 510: self = .notExtended(response: response)
        case 511: self = .networkAuthenticationRequired(response: response)
        case 500...599: self = .other(statusCode: statusCode, response: response)
        default: return nil
        }
    }

    public var statusCode: Int {
        switch self {
        case .internalServerError: return 500
        case .notImplemented: return 501
        case .badGateway: return 502
        case .serviceUnavailable: return 503
        case .gatewayTimeout: return 504
        case .httpVersionNotSupported: return 505
        case .variantAlsoNegotiates: return 506
        case .insufficientStorage: return 507
        case .loopDetected: return 508
        case .notExtended: return 510
        case .networkAuthenticationRequired: return 511
        case .other(let statusCode, _): return statusCode
        }
    }

    public var response: HTTPResponse? {
        switch self {
        case .internalServerError(let response): return response
        case .notImplemented(let response): return response
        case .badGateway(let response): return response
        case .serviceUnavailable(_, let response): return response
        case .gatewayTimeout(let response): return response
        case .httpVersionNotSupported(let response): return response
        case .variantAlsoNegotiates(let response): return response
        case .insufficientStorage(let response): return response
        case .loopDetected(let response): return response
        case .notExtended(let response): return response
        case .networkAuthenticationRequired(let response): return response
        case .other(_, let response): return response
        }
    }

    public var reasonPhrase: String {
        switch self {
        case .internalServerError: return "Internal Server Error"
        case .notImplemented: return "Not Implemented"
        case .badGateway: return "Bad Gateway"
        case .serviceUnavailable: return "Service Unavailable"
        case .gatewayTimeout: return "Gateway Timeout"
        case .httpVersionNotSupported: return "HTTP Version Not Supported"
        case .variantAlsoNegotiates: return "Variant Also Negotiates"
        case .insufficientStorage: return "Insufficient Storage"
        case .loopDetected: return "Loop Detected"
        case .notExtended: return "Not Extended"
        case .networkAuthenticationRequired: return "Network Authentication Required"
        case .other(let statusCode, _): return HTTPURLResponse.localizedString(forStatusCode: statusCode)
        }
    }

    /// The parsed `Retry-After` of a 503; `nil` for every other case.
    public var retryAfter: Duration? {
        if case .serviceUnavailable(let retryAfter, _) = self { return retryAfter }
        return nil
    }

    /// The error for a 503 whose Retry-After is given in seconds (NaN and negative values are
    /// zero, values too large are ``RetryAfter/longest``).
    static func serviceUnavailable(retryAfter seconds: TimeInterval?, response: HTTPResponse? = nil) -> Self {
        .serviceUnavailable(retryAfter: seconds.map(RetryAfter.duration(seconds:)), response: response)
    }

    public static func == (lhs: HTTPServerError, rhs: HTTPServerError) -> Bool {
        lhs.statusCode == rhs.statusCode
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(statusCode)
    }
}
