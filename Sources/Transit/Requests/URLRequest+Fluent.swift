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
///     $0.addingBearerAuthorization(accessToken: tokens.current.accessToken)
///         .receivingJSON()
///         .addingQueryItem(name: "q", value: "a+b & c")
/// }
/// ```
///
/// Helpers that take header names or values check them. They do not throw (so a chain reads
/// as above); instead the copy remembers the refused input in ``rejectedInput`` and
/// ``HTTPClient`` fails the request with that ``URLRequestError`` before anything is sent. A
/// value with CR, LF or another control character (header injection) or a name that is not a
/// token is never silently dropped or sent. Only ``sendingJSON(_:encoder:)`` throws, because
/// encoding can fail.
extension URLRequest {
    /// A copy with `value` added to the header `field`. If the header is already set, the new
    /// value is appended to it, comma-separated, as `URLRequest.addValue(_:forHTTPHeaderField:)`
    /// does. Header names match case-insensitively.
    ///
    /// An invalid name or value is refused: see ``rejectedInput``.
    public func addingValue(_ value: String, forHTTPHeaderField field: String) -> URLRequest {
        if let error = Self.checkHeader(field, value) { return rejecting(error) }
        return modified { $0.addValue(value, forHTTPHeaderField: field) }
    }

    /// A copy with the header `field` set to `value`, replacing any value it had (matched
    /// case-insensitively).
    ///
    /// An invalid name or value is refused: see ``rejectedInput``.
    public func settingValue(_ value: String, forHTTPHeaderField field: String) -> URLRequest {
        if let error = Self.checkHeader(field, value) { return rejecting(error) }
        return modified { $0.setValue(value, forHTTPHeaderField: field) }
    }

    /// A copy with `Authorization: Bearer <accessToken>`, replacing any `Authorization` header.
    ///
    /// A token that is empty or contains whitespace or a control character is refused with
    /// ``URLRequestError/invalidBearerToken`` (the token itself is not kept): see ``rejectedInput``.
    public func addingBearerAuthorization(accessToken: String) -> URLRequest {
        guard !accessToken.isEmpty, accessToken.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            return rejecting(.invalidBearerToken)
        }
        return modified { $0.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization") }
    }

    /// A copy with `Accept: application/json`, replacing any `Accept` header.
    public func receivingJSON() -> URLRequest {
        modified { $0.setValue("application/json", forHTTPHeaderField: "Accept") }
    }

    /// A copy whose body is `value` encoded by `encoder`, with `Content-Type: application/json`.
    ///
    /// - Throws: the encoder's error (an `EncodingError`) if `value` cannot be encoded; the
    ///   receiver is not changed.
    public func sendingJSON(_ value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws -> URLRequest {
        sendingBody(try encoder.encode(value), contentType: "application/json")
    }

    /// A copy whose body is `data`, with the `Content-Type` header set to `contentType`.
    ///
    /// A `contentType` with a control character is refused: see ``rejectedInput``.
    public func sendingBody(_ data: Data, contentType: String) -> URLRequest {
        settingValue(contentType, forHTTPHeaderField: "Content-Type").modified { $0.httpBody = data }
    }

    /// A copy whose URL has `items` appended to its query, after any query it already has.
    ///
    /// Names and values are percent-encoded completely: every character except letters, digits
    /// and `-._~` is encoded, so `+`, `&`, `=`, `#` and spaces in a value arrive as written
    /// (`a+b` is sent as `a%2Bb`, which no server reads as `a b`). An item with a `nil` value is
    /// sent as its bare name. The existing query is kept byte for byte.
    ///
    /// A request without a valid URL is refused with ``URLRequestError/invalidURL``: see
    /// ``rejectedInput``.
    public func addingQueryItems(_ items: [URLQueryItem]) -> URLRequest {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return rejecting(.invalidURL)
        }
        guard !items.isEmpty else { return self }
        let added = items.map { item in
            HTTPSyntax.percentEncodeQueryComponent(item.name)
                + (item.value.map { "=" + HTTPSyntax.percentEncodeQueryComponent($0) } ?? "")
        }
        let existing = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
        components.percentEncodedQuery = ((existing.map { [$0] } ?? []) + added).joined(separator: "&")
        guard let newURL = components.url else { return rejecting(.invalidURL) }
        return modified { $0.url = newURL }
    }

    /// A copy with one query item `name=value` appended. See ``addingQueryItems(_:)``.
    public func addingQueryItem(name: String, value: String?) -> URLRequest {
        addingQueryItems([URLQueryItem(name: name, value: value)])
    }

    /// A copy that times out after `seconds` (URLSession's idle timeout for the request).
    ///
    /// A timeout that is not finite and above zero is refused: see ``rejectedInput``.
    public func withTimeout(_ seconds: TimeInterval) -> URLRequest {
        guard seconds.isFinite, seconds > 0 else { return rejecting(.invalidTimeout(seconds)) }
        return modified { $0.timeoutInterval = seconds }
    }

    /// A copy sent with `method`.
    ///
    /// A method that is not a token (empty, or with a space or separator) is refused: see
    /// ``rejectedInput``.
    public func withMethod(_ method: HTTPMethod) -> URLRequest {
        guard HTTPSyntax.isToken(method.rawValue) else { return rejecting(.invalidMethod(method.rawValue)) }
        return modified { $0.httpMethod = method.rawValue }
    }

    /// A copy with `policy` as its cache policy.
    public func withCachePolicy(_ policy: URLRequest.CachePolicy) -> URLRequest {
        modified { $0.cachePolicy = policy }
    }

    static func checkHeader(_ field: String, _ value: String) -> URLRequestError? {
        guard HTTPSyntax.isToken(field) else { return .invalidHeaderName(field) }
        guard HTTPSyntax.isFieldValue(value) else { return .invalidHeaderValue(name: field) }
        return nil
    }

    /// The header in which a helper records the first input it refused. Its value is the
    /// error, JSON-encoded and then Base64-encoded, so it is always a valid header value.
    static let rejectionField = "Transit-Rejected-Input"

    /// The first input a fluent helper refused on this request (or on the request it was
    /// copied from), or `nil`. A request without a URL, which cannot be sent, reports
    /// ``URLRequestError/invalidURL`` unless an earlier refusal is remembered. ``HTTPClient``
    /// fails the request with this error and sends nothing.
    public var rejectedInput: URLRequestError? {
        if let marker = value(forHTTPHeaderField: Self.rejectionField),
           let data = Data(base64Encoded: marker),
           let error = try? Self.rejectionDecoder().decode(URLRequestError.self, from: data) {
            return error
        }
        return url == nil ? .invalidURL : nil
    }

    /// A copy that remembers `error`, unless an earlier refusal is already remembered.
    func rejecting(_ error: URLRequestError) -> URLRequest {
        guard rejectedInput == nil, let data = try? Self.rejectionEncoder().encode(error) else { return self }
        return modified { $0.setValue(data.base64EncodedString(), forHTTPHeaderField: Self.rejectionField) }
    }

    /// A copy changed by `change`. A request without a URL is returned unchanged: it already
    /// reports ``URLRequestError/invalidURL``, and Linux Foundation traps when a copy of a
    /// URL-less request is changed.
    func modified(_ change: (inout URLRequest) -> Void) -> URLRequest {
        guard url != nil else { return self }
        var copy = self
        change(&copy)
        return copy
    }

    /// Non-finite numbers (a refused NaN or infinite timeout) are written as strings: the
    /// default strategy throws on them, which would lose the refusal.
    private static let nonFiniteAsStrings = (positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")

    private static func rejectionEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        let names = nonFiniteAsStrings
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: names.positiveInfinity, negativeInfinity: names.negativeInfinity, nan: names.nan)
        return encoder
    }

    private static func rejectionDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        let names = nonFiniteAsStrings
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: names.positiveInfinity, negativeInfinity: names.negativeInfinity, nan: names.nan)
        return decoder
    }
}
