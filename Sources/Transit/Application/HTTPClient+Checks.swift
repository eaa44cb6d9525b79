import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client checks before it sends, and what it adds to a transport error.
extension HTTPClient {
    /// The first reason `request` must not be sent: input a fluent helper refused (or a missing
    /// URL, see `URLRequest.rejectedInput`), or a header name that is not a token, or a header value with a control character, or a method that
    /// is not a token.
    static func validate(_ request: URLRequest) -> URLRequestError? {
        validate(request, headers: request.allHTTPHeaderFields ?? [:])
    }

    /// ``validate(_:)`` with the request's header fields already read.
    static func validate(_ request: URLRequest, headers: [String: String]) -> URLRequestError? {
        if let refused = request.rejectedInput { return refused }
        if let method = request.httpMethod, !HTTPSyntax.isToken(method) { return .invalidMethod(method) }
        for (field, value) in headers {
            if let error = URLRequest.checkHeader(field, value) { return error }
        }
        return nil
    }

    /// `true` if two header names are the same name: ASCII letters compared case-insensitively,
    /// everything else byte for byte (header names are tokens, which are ASCII).
    static func sameFieldName(_ a: String, _ b: String) -> Bool {
        let a = a.utf8, b = b.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x ^ y == 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
    }

    /// The `URLError.userInfo` key under which ``send(_:)`` records the method of the request a
    /// transport error belongs to (a `String`), so that ``RetryPolicy`` can tell whether sending
    /// it again is safe without being told the method.
    public static let requestMethodKey = "TransitRequestMethod"

    /// A transport `URLError` with the request's method (and URL, if missing) added to its
    /// `userInfo`; the code is unchanged. Other errors are returned as they are.
    static func annotate(_ error: any Error, sentWith request: URLRequest) -> any Error {
        guard let urlError = error as? URLError, urlError.userInfo[requestMethodKey] == nil else { return error }
        var userInfo = urlError.userInfo
        userInfo[requestMethodKey] = request.httpMethod ?? "GET"
        if userInfo[NSURLErrorFailingURLErrorKey] == nil, let url = request.url {
            userInfo[NSURLErrorFailingURLErrorKey] = url
        }
        return URLError(urlError.code, userInfo: userInfo)
    }
}
