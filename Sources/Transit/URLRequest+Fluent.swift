import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fluent, non-mutating helpers that compose request modifiers.
///
/// Each returns a modified copy and leaves the receiver untouched, so they chain inside a
/// ``RequestModifier``; one `try` covers the whole chain:
///
/// ```swift
/// api.get(endpoint: "posts") {
///     try $0.addingBearerAuthorization(accessToken: tokens.current)
///         .receivingJSON()
///         .addingQueryItem(name: "q", value: "a+b & c")
/// }
/// ```
///
/// Helpers that take header names or values check them and throw ``URLRequestError`` instead of
/// sending a malformed request: a value with CR, LF or another control character (header
/// injection) or a name that is not a token is rejected, never silently dropped or sent.
extension URLRequest {
    /// A copy with `value` added to the header `field`. If the header is already set, the new
    /// value is appended to it, comma-separated, as `URLRequest.addValue(_:forHTTPHeaderField:)`
    /// does. Header names match case-insensitively.
    ///
    /// - Throws: ``URLRequestError/invalidHeaderName(_:)`` or
    ///   ``URLRequestError/invalidHeaderValue(name:)``.
    public func addingValue(_ value: String, forHTTPHeaderField field: String) throws -> URLRequest {
        try Self.checkHeader(field, value)
        var copy = self
        copy.addValue(value, forHTTPHeaderField: field)
        return copy
    }

    /// A copy with the header `field` set to `value`, replacing any value it had (matched
    /// case-insensitively).
    ///
    /// - Throws: ``URLRequestError/invalidHeaderName(_:)`` or
    ///   ``URLRequestError/invalidHeaderValue(name:)``.
    public func settingValue(_ value: String, forHTTPHeaderField field: String) throws -> URLRequest {
        try Self.checkHeader(field, value)
        var copy = self
        copy.setValue(value, forHTTPHeaderField: field)
        return copy
    }

    /// A copy with `Authorization: Bearer <accessToken>`, replacing any `Authorization` header.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` if the token is empty or contains
    ///   whitespace or a control character (the token itself is not put in the error).
    public func addingBearerAuthorization(accessToken: String) throws -> URLRequest {
        guard !accessToken.isEmpty, accessToken.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw URLRequestError.invalidBearerToken
        }
        var copy = self
        copy.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        return copy
    }

    /// A copy with `Accept: application/json`, replacing any `Accept` header.
    public func receivingJSON() -> URLRequest {
        var copy = self
        copy.setValue("application/json", forHTTPHeaderField: "Accept")
        return copy
    }

    /// A copy whose body is `value` encoded by `encoder`, with `Content-Type: application/json`.
    ///
    /// - Throws: the encoder's error (an `EncodingError`) if `value` cannot be encoded; the
    ///   receiver is not changed.
    public func sendingJSON(_ value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws -> URLRequest {
        try sendingBody(encoder.encode(value), contentType: "application/json")
    }

    /// A copy whose body is `data`, with the `Content-Type` header set to `contentType`.
    ///
    /// - Throws: ``URLRequestError/invalidHeaderValue(name:)`` if `contentType` contains a
    ///   control character.
    public func sendingBody(_ data: Data, contentType: String) throws -> URLRequest {
        var copy = try settingValue(contentType, forHTTPHeaderField: "Content-Type")
        copy.httpBody = data
        return copy
    }

    /// A copy whose URL has `items` appended to its query, after any query it already has.
    ///
    /// Names and values are percent-encoded completely: every character except letters, digits
    /// and `-._~` is encoded, so `+`, `&`, `=`, `#` and spaces in a value arrive as written
    /// (`a+b` is sent as `a%2Bb`, which no server reads as `a b`). An item with a `nil` value is
    /// sent as its bare name. The existing query is kept byte for byte.
    ///
    /// - Throws: `URLError(.badURL)` if the request has no URL.
    public func addingQueryItems(_ items: [URLQueryItem]) throws -> URLRequest {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "Cannot add query items: the request has no valid URL."])
        }
        guard !items.isEmpty else { return self }
        let added = items.map { item in
            HTTPSyntax.percentEncodeQueryComponent(item.name)
                + (item.value.map { "=" + HTTPSyntax.percentEncodeQueryComponent($0) } ?? "")
        }
        let existing = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
        components.percentEncodedQuery = ((existing.map { [$0] } ?? []) + added).joined(separator: "&")
        guard let newURL = components.url else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "Cannot add query items to \(url.absoluteString)."])
        }
        var copy = self
        copy.url = newURL
        return copy
    }

    /// A copy with one query item `name=value` appended. See ``addingQueryItems(_:)``.
    public func addingQueryItem(name: String, value: String?) throws -> URLRequest {
        try addingQueryItems([URLQueryItem(name: name, value: value)])
    }

    /// A copy that times out after `seconds` (URLSession's idle timeout for the request).
    ///
    /// - Throws: ``URLRequestError/invalidTimeout(_:)`` unless `seconds` is finite and above zero.
    public func withTimeout(_ seconds: TimeInterval) throws -> URLRequest {
        guard seconds.isFinite, seconds > 0 else { throw URLRequestError.invalidTimeout(seconds) }
        var copy = self
        copy.timeoutInterval = seconds
        return copy
    }

    /// A copy sent with `method`.
    ///
    /// - Throws: ``URLRequestError/invalidMethod(_:)`` if the method is not a token (empty, or
    ///   with a space or separator).
    public func withMethod(_ method: HTTPMethod) throws -> URLRequest {
        guard HTTPSyntax.isToken(method.rawValue) else { throw URLRequestError.invalidMethod(method.rawValue) }
        var copy = self
        copy.httpMethod = method.rawValue
        return copy
    }

    /// A copy with `policy` as its cache policy.
    public func withCachePolicy(_ policy: URLRequest.CachePolicy) -> URLRequest {
        var copy = self
        copy.cachePolicy = policy
        return copy
    }

    static func checkHeader(_ field: String, _ value: String) throws {
        guard HTTPSyntax.isToken(field) else { throw URLRequestError.invalidHeaderName(field) }
        guard HTTPSyntax.isFieldValue(value) else { throw URLRequestError.invalidHeaderValue(name: field) }
    }
}
