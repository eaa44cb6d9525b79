import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client checks before it sends, and how it reports a transport failure.
extension HTTPClient {
    /// The first reason `request` must not be sent, checked before anything reaches a transport:
    /// - it has no URL (``URLRequestError/invalidURL``: Foundation traps on one), its URL is not
    ///   `http` or `https` with a host (``URLRequestError/unsupportedURL(_:)``), or it carries
    ///   user-info (``URLRequestError/credentialsInURL(_:)``: one transport would send it as Basic,
    ///   another would drop it);
    /// - its `timeoutInterval` is not above zero and at most
    ///   1,000,000,000 seconds (``URLRequestError/invalidTimeout(_:)``:
    ///   Foundation on Linux traps converting NaN, infinity or a huge value to milliseconds);
    /// - it has an `httpBodyStream` (``URLRequestError/bodyStreamNotSupported``);
    /// - its method is not a token, or one of its headers has a name that is not a token or a
    ///   value with a control character.
    ///
    /// The fluent helpers refuse such input when it is given (they throw); this catches what was
    /// set by other means (`setValue(_:forHTTPHeaderField:)`, `httpMethod`, `timeoutInterval`, a
    /// default header). The other fields of `URLRequest` (cache policy, `mainDocumentURL`,
    /// network service type, cookie handling) are enumerations or values Foundation reads
    /// without converting, and pass as they are.
    static func validate(_ request: URLRequest) -> URLRequestError? {
        validate(request, headers: request.allHTTPHeaderFields ?? [:])
    }

    /// ``validate(_:)`` with the request's header fields already read.
    static func validate(_ request: URLRequest, headers: [String: String]) -> URLRequestError? {
        guard let url = request.url else { return .invalidURL }
        if let error = check(url) { return error }
        let timeout = request.timeoutInterval
        // NaN fails the first comparison.
        guard timeout > 0, timeout <= URLRequest.maximumTimeoutInterval else { return .invalidTimeout(timeout) }
        if let method = request.httpMethod, !HTTPSyntax.isToken(method) { return .invalidMethod(method) }
        if request.httpBodyStream != nil { return .bodyStreamNotSupported }
        for (field, value) in headers {
            if let error = URLRequest.checkHeader(field, value) { return error }
        }
        return nil
    }

    /// Why `url` cannot be sent, or `nil`: it must be `http` or `https`, with a host and without
    /// user-info. A plain URL (see ``URLOrigin``: no user-info by definition) is read in one scan
    /// of its bytes; Foundation reads any other.
    static func check(_ url: URL) -> URLRequestError? {
        if let http = URLOrigin.withPlainSchemeAndHost(url, { scheme, _ in isHTTP(scheme) }) {
            return http ? nil : .unsupportedURL(Redaction.redact(url: url))
        }
        if url.user != nil || url.password != nil { return .credentialsInURL(Redaction.redact(url: url)) }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host?.isEmpty == false else {
            return .unsupportedURL(Redaction.redact(url: url))
        }
        return nil
    }

    /// Whether a scheme's bytes, in any case, are `http` or `https`.
    private static func isHTTP(_ scheme: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard scheme.count == 4 || scheme.count == 5 else { return false }
        // Indexed, not zipped with a string's bytes: a zip's iterator over a `String.UTF8View`
        // is destroyed through its generic metadata, which cost more than the whole check.
        let start = scheme.startIndex
        guard scheme[start] | 0x20 == UInt8(ascii: "h"), scheme[start + 1] | 0x20 == UInt8(ascii: "t"),
              scheme[start + 2] | 0x20 == UInt8(ascii: "t"), scheme[start + 3] | 0x20 == UInt8(ascii: "p")
        else { return false }
        return scheme.count == 4 || scheme[start + 4] | 0x20 == UInt8(ascii: "s")
    }
}
