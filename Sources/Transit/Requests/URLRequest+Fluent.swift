import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fluent, non-mutating helpers that compose request modifiers.
///
/// Each returns a modified copy and leaves the receiver untouched, so they chain inside a
/// ``RequestModifier``:
///
/// ```swift
/// api.get(endpoint: "posts") {
///     try $0.addingBearerAuthorization(accessToken: tokens.current.accessToken)
///         .receivingJSON()
///         .addingQueryItem(name: "q", value: "a+b & c")
/// }
/// ```
///
/// Helpers that take input they can refuse — header names and values, a bearer token, Basic
/// credentials, a method, a timeout, query items for a request without a URL — **throw** a
/// ``URLRequestError`` at once, and one `try` in front of the chain covers them all. Inside a modifier the throw
/// fails the request's signal with that error and nothing is sent. A value with CR, LF or another
/// control character (header injection) or a name that is not a token is never silently dropped
/// or sent, and nothing about the refusal is stored on the request. Helpers that cannot fail
/// (``receivingJSON()``, ``withCachePolicy(_:)``) do not throw.
///
/// A request without a URL cannot be sent: the throwing helpers refuse it with
/// ``URLRequestError/invalidURL``, the others return it unchanged, and ``HTTPClient`` fails it
/// with ``URLRequestError/invalidURL``.
extension URLRequest {
    /// A copy with `value` added to the header `field`. If the header is already set, the new
    /// value is appended to it, comma-separated, as `URLRequest.addValue(_:forHTTPHeaderField:)`
    /// does. Header names match case-insensitively.
    ///
    /// - Throws: ``URLRequestError/invalidHeaderName(_:)`` for a name that is not a token,
    ///   ``URLRequestError/invalidHeaderValue(name:)`` for a value with a control character, and
    ///   ``URLRequestError/invalidURL`` for a request without a URL.
    public consuming func addingValue(_ value: String, forHTTPHeaderField field: String) throws -> URLRequest {
        if let error = Self.checkHeader(field, value) { throw error }
        return try changed { $0.addValue(value, forHTTPHeaderField: field) }
    }

    /// A copy with the header `field` set to `value`, replacing any value it had (matched
    /// case-insensitively).
    ///
    /// - Throws: as ``addingValue(_:forHTTPHeaderField:)``.
    public consuming func settingValue(_ value: String, forHTTPHeaderField field: String) throws -> URLRequest {
        if let error = Self.checkHeader(field, value) { throw error }
        return try changed { $0.setValue(value, forHTTPHeaderField: field) }
    }

    /// A copy with `Authorization: Bearer <accessToken>`, replacing any `Authorization` header.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` for a token that is empty or contains
    ///   whitespace or a control character — a token read from a file with its trailing newline
    ///   among them (the token itself is not kept in the error); ``URLRequestError/invalidURL``
    ///   for a request without a URL.
    public consuming func addingBearerAuthorization(accessToken: String) throws -> URLRequest {
        guard HTTPSyntax.isBearerToken(accessToken) else {
            throw URLRequestError.invalidBearerToken
        }
        return try changed { $0.setCheckedHeader("Bearer \(accessToken)", canonicalName: "Authorization") }
    }

    /// A copy with `Authorization: Basic <credentials>` (RFC 7617), replacing any `Authorization`
    /// header: `<credentials>` is the Base64 of the UTF-8 bytes of `username:password` (the
    /// `charset="UTF-8"` encoding of RFC 7617 §2.1), so a non-ASCII password reaches the server
    /// as UTF-8 on every transport. The strings are encoded as given, not normalized.
    ///
    /// Like every `Authorization` header, the value is redacted in descriptions, cURL renderings
    /// and monitor events (``Redaction``), and a redirect to another origin drops it. For
    /// credentials on every request to some hosts, use ``BasicCredentials`` as the client's
    /// authoriser instead.
    ///
    /// - Throws: ``URLRequestError/colonInBasicUsername`` for a user name with a `:` (the server
    ///   would split the credentials there), ``URLRequestError/controlCharacterInBasicUsername``
    ///   or ``URLRequestError/controlCharacterInBasicPassword`` for a control character (U+0000–
    ///   U+001F, U+007F–U+009F) in either (RFC 7617 §2); neither the user name nor the password
    ///   is kept in the error. ``URLRequestError/invalidURL`` for a request without a URL.
    public consuming func addingBasicAuthorization(username: String, password: String) throws -> URLRequest {
        let header = try Self.basicAuthorization(username: username, password: password)
        return try changed { $0.setCheckedHeader(header, canonicalName: "Authorization") }
    }

    /// The `Authorization` value for Basic credentials, `Basic base64(utf8(username:password))`.
    ///
    /// - Throws: the ``URLRequestError`` for a user name or password RFC 7617 §2 forbids.
    static func basicAuthorization(username: String, password: String) throws -> String {
        if username.unicodeScalars.contains(":") { throw URLRequestError.colonInBasicUsername }
        if username.unicodeScalars.contains(where: Self.isControl) { throw URLRequestError.controlCharacterInBasicUsername }
        if password.unicodeScalars.contains(where: Self.isControl) { throw URLRequestError.controlCharacterInBasicPassword }
        return "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
    }

    /// A control character (Unicode general category Cc): RFC 5234's CTL (U+0000–U+001F, U+007F)
    /// and the C1 controls (U+0080–U+009F), which RFC 5198 excludes from UTF-8 text too.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// A copy with `Accept: application/json`, replacing any `Accept` header.
    public consuming func receivingJSON() -> URLRequest {
        modified { $0.setCheckedHeader("application/json", canonicalName: "Accept") }
    }

    /// A copy whose body is `value` encoded by `encoder`, with `Content-Type: application/json`.
    ///
    /// - Throws: the encoder's error (an `EncodingError`) if `value` cannot be encoded;
    ///   ``URLRequestError/invalidURL`` for a request without a URL. The receiver is not changed.
    public consuming func sendingJSON(_ value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws -> URLRequest {
        try sendingBody(try encoder.encode(value), contentType: "application/json")
    }

    /// A copy whose body is `data`, with the `Content-Type` header set to `contentType`.
    ///
    /// - Throws: ``URLRequestError/invalidHeaderValue(name:)`` for a `contentType` with a control
    ///   character; ``URLRequestError/invalidURL`` for a request without a URL.
    public consuming func sendingBody(_ data: Data, contentType: String) throws -> URLRequest {
        try settingValue(contentType, forHTTPHeaderField: "Content-Type").modified { $0.httpBody = data }
    }

    /// A copy whose URL has `items` appended to its query (see ``addingQueryItem(name:value:)``).
    consuming func addingQueryItems(_ items: [URLQueryItem]) throws -> URLRequest {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw URLRequestError.invalidURL
        }
        guard !items.isEmpty else { return self }
        let added = items.map { item in
            HTTPSyntax.percentEncodeQueryComponent(item.name)
                + (item.value.map { "=" + HTTPSyntax.percentEncodeQueryComponent($0) } ?? "")
        }
        let existing = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
        components.percentEncodedQuery = ((existing.map { [$0] } ?? []) + added).joined(separator: "&")
        guard let newURL = components.url else { throw URLRequestError.invalidURL }
        return modified { $0.url = newURL }
    }

    /// A copy whose URL has the query item `name=value` appended, after any query it already has;
    /// chain calls to add more (a name may repeat).
    ///
    /// The name and the value are percent-encoded completely: every character except letters,
    /// digits and `-._~` is encoded, so `+`, `&`, `=`, `#` and spaces in a value arrive as written
    /// (`a+b` is sent as `a%2Bb`, which no server reads as `a b`). A `nil` value is sent as the
    /// bare name. The existing query is kept byte for byte.
    ///
    /// - Throws: ``URLRequestError/invalidURL`` for a request without a valid URL.
    public consuming func addingQueryItem(name: String, value: String?) throws -> URLRequest {
        try addingQueryItems([URLQueryItem(name: name, value: value)])
    }

    /// The longest `timeoutInterval` Transit sends: 1,000,000,000 seconds (about 31 years).
    ///
    /// Foundation converts a request's timeout to whole milliseconds and traps on a value it cannot
    /// convert (NaN, infinity, or more seconds than fit), and other transports convert it to
    /// nanoseconds; every value up to this one converts exactly. ``HTTPClient`` refuses a request
    /// whose timeout is above it (or not above zero) with ``URLRequestError/invalidTimeout(_:)``,
    /// and so does ``withTimeout(_:)``. For a limit on the whole request use a ``Deadline``.
    package static let maximumTimeoutInterval: TimeInterval = 1_000_000_000

    /// A copy that times out after `seconds` (URLSession's idle timeout for the request).
    ///
    /// - Throws: ``URLRequestError/invalidTimeout(_:)`` for a timeout that is not above zero and
    ///   at most 1,000,000,000 seconds, about 31 years (NaN and infinities among them), the rule
    ///   ``HTTPClient`` applies to every request; ``URLRequestError/invalidURL`` for a request
    ///   without a URL.
    public consuming func withTimeout(_ seconds: TimeInterval) throws -> URLRequest {
        guard seconds > 0, seconds <= Self.maximumTimeoutInterval else { throw URLRequestError.invalidTimeout(seconds) }
        return try changed { $0.timeoutInterval = seconds }
    }

    /// A copy sent with `method`.
    ///
    /// - Throws: ``URLRequestError/invalidMethod(_:)`` for a method that is not a token (empty,
    ///   or with a space or separator); ``URLRequestError/invalidURL`` for a request without a
    ///   URL.
    public consuming func withMethod(_ method: HTTPMethod) throws -> URLRequest {
        guard HTTPSyntax.isToken(method.rawValue) else { throw URLRequestError.invalidMethod(method.rawValue) }
        return try changed { $0.httpMethod = method.rawValue }
    }

    /// A copy with `policy` as its cache policy.
    public consuming func withCachePolicy(_ policy: URLRequest.CachePolicy) -> URLRequest {
        modified { $0.cachePolicy = policy }
    }

    /// The reason the header `field: value` must not be sent, or `nil` if it may.
    static func checkHeader(_ field: String, _ value: String) -> URLRequestError? {
        guard HTTPSyntax.isToken(field) else { return .invalidHeaderName(field) }
        guard HTTPSyntax.isFieldValue(value) else { return .invalidHeaderValue(name: field) }
        return nil
    }

    /// Sets the header `canonicalName` (a name spelled as Foundation stores it, such as
    /// `Authorization`) to `value`, a value already checked, replacing any field of that name
    /// whatever its case.
    ///
    /// On Linux this writes the header dictionary directly: Foundation's `setValue` checks the
    /// value again Character by Character, capitalises the name through `NSString` and lowercases
    /// every stored name to find the old field, which costs more than the rest of what Transit does
    /// to a request (BENCHMARKS.md, "Costs on the request path, and what Transit does about
    /// them"). The result is the same dictionary.
    mutating func setCheckedHeader(_ value: String, canonicalName: String) {
        #if canImport(FoundationNetworking)
        var fields = allHTTPHeaderFields ?? [:]
        if fields[canonicalName] == nil, let old = fields.keys.first(where: { HTTPSyntax.sameFieldName($0, canonicalName) }) {
            fields.removeValue(forKey: old)
        }
        fields[canonicalName] = value
        allHTTPHeaderFields = fields
        #else
        setValue(value, forHTTPHeaderField: canonicalName)
        #endif
    }

    /// A copy changed by `change`; throws ``URLRequestError/invalidURL`` for a request without a
    /// URL, which cannot be sent.
    private consuming func changed(_ change: (inout URLRequest) -> Void) throws -> URLRequest {
        guard url != nil else { throw URLRequestError.invalidURL }
        return modified(change)
    }

    /// A copy changed by `change`. A request without a URL is returned unchanged: it cannot be
    /// sent (``HTTPClient`` refuses it with ``URLRequestError/invalidURL``), and Linux Foundation
    /// traps when a copy of a URL-less request is changed.
    consuming func modified(_ change: (inout URLRequest) -> Void) -> URLRequest {
        guard url != nil else { return self }
        // `consume`: the receiver's reference moves into `copy`, so a request that nothing else
        // holds is changed in place instead of copying its whole `NSURLRequest` (Linux).
        var copy = consume self
        change(&copy)
        return copy
    }
}
