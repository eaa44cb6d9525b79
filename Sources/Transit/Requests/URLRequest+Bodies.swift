import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The form body a `RequestBody.form(_:)` sets.
extension URLRequest {
    /// A copy whose body is `form`, serialised as `application/x-www-form-urlencoded`, with
    /// `Content-Type: application/x-www-form-urlencoded` (replacing any `Content-Type`).
    ///
    /// It cannot fail: every form has a serialisation and the header value is fixed. A request
    /// without a URL is returned unchanged (``HTTPClient`` refuses it with
    /// ``URLRequestError/invalidURL``).
    func sendingForm(_ form: URLEncodedForm) -> URLRequest {
        // Linux Foundation traps when a copy of a URL-less request is changed; like the other
        // helpers that cannot fail, this one returns it unchanged, and the client refuses it with
        // `URLRequestError.invalidURL`.
        guard url != nil else { return self }
        var copy = self
        copy.setValue(URLEncodedForm.contentType, forHTTPHeaderField: "Content-Type")
        copy.httpBody = form.encodedData
        return copy
    }
}
