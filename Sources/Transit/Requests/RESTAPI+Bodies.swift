import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Verbs for form bodies, beside the JSON ones: `application/x-www-form-urlencoded` and
/// `multipart/form-data`.
extension RESTAPI {
    /// A signal that sends a request whose body is `form`, URL-encoded, with
    /// `Content-Type: application/x-www-form-urlencoded`.
    ///
    /// The body is set on every attempt before `modifier` runs (so the modifier may replace it).
    /// Otherwise as ``request(method:endpoint:body:options:modifier:)``.
    public func request(
        method: HTTPMethod,
        endpoint: String,
        form: URLEncodedForm,
        options: RequestOptions = RequestOptions(),
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        request(method: method, endpoint: endpoint, options: options) { request in
            try modifier(request.sendingForm(form))
        }
    }

    /// A POST request whose body is `form`, URL-encoded. See
    /// ``request(method:endpoint:form:options:modifier:)``.
    ///
    /// ```swift
    /// api.post(endpoint: "oauth/token", form: ["grant_type": "password", "username": user, "password": password])
    /// ```
    public func post(
        endpoint: String,
        form: URLEncodedForm,
        options: RequestOptions = RequestOptions(),
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .post, endpoint: endpoint, form: form, options: options, modifier: modifier)
    }

    /// A signal that sends a request whose body is the `multipart/form-data` form `multipart`.
    ///
    /// On every subscription the URL is built, the method set and `modifier` run; then the form
    /// is encoded and sent by ``HTTPClient/send(_:multipart:options:)``: in memory when it is
    /// small and has no file parts, otherwise through a temporary file that streams the files from
    /// disk and is removed when the request ends. The `Content-Type` (with the boundary) is always
    /// the form's. A file that cannot be read fails the signal with
    /// ``MultipartFormDataError/unreadableFile(_:partName:reason:)`` and nothing is sent.
    public func request(
        method: HTTPMethod,
        endpoint: String,
        multipart form: MultipartFormData,
        options: RequestOptions = RequestOptions(),
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        let api = self
        return Signal(tryDeferred: {
            var request = URLRequest(url: try URLBuilder.url(base: api.baseURL, endpoint: endpoint))
            // The client checks that the method is a token before anything is sent.
            request.httpMethod = method.rawValue
            return api.client.send(try modifier(request), multipart: form, options: options)
        })
    }

    /// A POST request whose body is the `multipart/form-data` form `multipart`. See
    /// ``request(method:endpoint:multipart:options:modifier:)``.
    ///
    /// ```swift
    /// var form = MultipartFormData()
    /// form.append("Holiday", name: "title")
    /// form.append(fileAt: videoURL, name: "video", contentType: "video/mp4")
    /// api.post(endpoint: "uploads", multipart: form)
    /// ```
    public func post(
        endpoint: String,
        multipart form: MultipartFormData,
        options: RequestOptions = RequestOptions(),
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .post, endpoint: endpoint, multipart: form, options: options, modifier: modifier)
    }

    /// A PUT request whose body is the `multipart/form-data` form `multipart`. See
    /// ``request(method:endpoint:multipart:options:modifier:)``.
    public func put(
        endpoint: String,
        multipart form: MultipartFormData,
        options: RequestOptions = RequestOptions(),
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .put, endpoint: endpoint, multipart: form, options: options, modifier: modifier)
    }
}
