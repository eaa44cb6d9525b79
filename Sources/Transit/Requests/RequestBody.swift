import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A value that can be sent as a request's body: `Data` (sent as it is, with no `Content-Type`)
/// and ``RequestBody`` (data, JSON, a form, multipart or a file).
///
/// The body parameter of every ``RESTAPI`` verb takes one, so both spellings work:
///
/// ```swift
/// api.post(endpoint: "notes", body: Data("hello".utf8))
/// api.post(endpoint: "posts", body: .json(NewPost(title: "Hi")))
/// api.put(endpoint: "settings", body: .form(["theme": "dark"]))
/// ```
public protocol RequestBodyConvertible: Sendable {
    /// The body to send. A verb reads it once, when it builds its signal; what the body then
    /// does (encoding JSON, writing a multipart form) happens again on every attempt.
    var requestBody: RequestBody { get }
}

/// The body of a request, and the `Content-Type` that goes with it.
///
/// Every kind sets its `Content-Type` before the request modifier runs, so a modifier may
/// replace the content type or the body; a file or a large multipart form is streamed from disk
/// after the modifier, so only its headers can be changed there. A body is prepared inside the
/// subscription, on every attempt: JSON is encoded again and a multipart form written again, and
/// an error while doing so fails the signal and sends nothing.
///
/// | body | `Content-Type` | sent |
/// |---|---|---|
/// | `data(_:contentType:)` | `contentType`, if given | from memory |
/// | `json(_:encoder:)` | `application/json` | from memory, encoded on every attempt |
/// | `form(_:)` | `application/x-www-form-urlencoded` | from memory |
/// | `multipart(_:)` | `multipart/form-data; boundary=…` | from memory, or through a temporary file |
/// | `file(_:contentType:)` | `contentType`, if given | streamed from disk, never read into memory |
public struct RequestBody: RequestBodyConvertible {
    enum Content: Sendable {
        case data(Data, contentType: String?)
        case json(@Sendable () throws -> Data)
        case form(URLEncodedForm)
        case multipart(MultipartFormData)
        case file(URL, contentType: String?)
    }

    let content: Content

    /// The body itself.
    public var requestBody: RequestBody { self }
}

extension RequestBodyConvertible where Self == RequestBody {
    /// `data`, sent byte for byte, with `Content-Type: contentType` when one is given (a value
    /// with a control character fails the request with ``URLRequestError/invalidHeaderValue(name:)``
    /// and nothing is sent).
    public static func data(_ data: Data, contentType: String? = nil) -> RequestBody {
        RequestBody(content: .data(data, contentType: contentType))
    }

    /// `value` encoded by `encoder`, with `Content-Type: application/json`.
    ///
    /// The value is encoded inside the subscription, on every attempt, before the request modifier
    /// runs. An encoding error (an `EncodingError`) fails the signal; the modifier does not run
    /// and nothing is sent.
    public static func json(_ value: some Encodable & Sendable, encoder: JSONEncoder = JSONEncoder()) -> RequestBody {
        RequestBody(content: .json({ try encoder.encode(value) }))
    }

    /// `form`, serialised as `application/x-www-form-urlencoded` (see ``URLEncodedForm``), with
    /// that `Content-Type`.
    ///
    /// ```swift
    /// api.post(endpoint: "oauth/token", body: .form(["grant_type": "password", "username": user, "password": password]))
    /// ```
    public static func form(_ form: URLEncodedForm) -> RequestBody {
        RequestBody(content: .form(form))
    }

    /// The `multipart/form-data` form `form`, with its `Content-Type` (which carries the boundary).
    ///
    /// A form whose parts are all in memory and at most ``MultipartFormData/maxInMemoryBodyBytes``
    /// long is encoded into the body before the request modifier runs. Any other form (a file
    /// part, or a large body) is written, after the modifier, to a new temporary file in
    /// ``MultipartFormData/temporaryDirectory`` on the client's scheduler (never on the
    /// subscribing thread), reading each file in 64 KiB blocks; the request is sent from that
    /// file with `Content-Length` set to its size, and the file is removed when the signal ends:
    /// before its terminal event is delivered, or when the subscription is cancelled (writing
    /// stops at the next block). The deadline counts from when the body is written.
    ///
    /// A file that cannot be read fails the signal with
    /// ``MultipartFormDataError/unreadableFile(_:partName:reason:)`` and nothing is sent.
    ///
    /// ```swift
    /// var form = MultipartFormData()
    /// form.append("Holiday", name: "title")
    /// form.append(fileAt: videoURL, name: "video", contentType: "video/mp4")
    /// api.post(endpoint: "uploads", body: .multipart(form))
    /// ```
    public static func multipart(_ form: MultipartFormData) -> RequestBody {
        RequestBody(content: .multipart(form))
    }

    /// The contents of the file at `url`, streamed from disk when the request is sent (never read
    /// into memory), with `Content-Type: contentType` when one is given.
    ///
    /// ```swift
    /// api.put(endpoint: "videos/42", body: .file(movie, contentType: "video/mp4"))
    /// ```
    public static func file(_ url: URL, contentType: String? = nil) -> RequestBody {
        RequestBody(content: .file(url, contentType: contentType))
    }
}

extension Data: RequestBodyConvertible {
    /// The data, sent byte for byte with no `Content-Type`.
    public var requestBody: RequestBody { RequestBody(content: .data(self, contentType: nil)) }
}

extension RequestBody {
    /// `request` with this body's `Content-Type` and, for a body held in memory, its bytes. Runs
    /// before the request modifier.
    ///
    /// - Throws: the encoder's error for JSON, a ``MultipartFormDataError`` for an in-memory
    ///   multipart form that cannot be encoded, ``URLRequestError/invalidHeaderValue(name:)`` for
    ///   a content type with a control character.
    func prepared(_ request: consuming URLRequest) throws -> URLRequest {
        switch content {
        case .data(let data, nil):
            var withBody = consume request
            withBody.httpBody = data
            return withBody
        case .data(let data, let contentType?):
            return try request.sendingBody(data, contentType: contentType)
        case .json(let encode):
            return try request.sendingBody(try encode(), contentType: "application/json")
        case .form(let form):
            return request.sendingForm(form)
        case .multipart(let form):
            guard !form.needsFile else {
                return try request.settingValue(form.contentType, forHTTPHeaderField: "Content-Type")
            }
            return try request.sendingBody(try form.encodedData(), contentType: form.contentType)
        case .file(_, nil):
            return request
        case .file(_, let contentType?):
            return try request.settingValue(contentType, forHTTPHeaderField: "Content-Type")
        }
    }
}
