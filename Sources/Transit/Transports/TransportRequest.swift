import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request as Transit carries it from the client to a transport: method, URL, header fields in
/// order, body — and, for a transport that can, where the response body goes.
///
/// Transit's own value rather than Foundation's `URLRequest`, like async-http-client's
/// `HTTPClientRequest` or Get's `Request`: the client builds, authorises and completes a request
/// on these four fields, and a transport that does not speak Foundation (the AsyncHTTPClient
/// adapter) reads them as they are. A `URLRequest` is made only where one is asked for
/// (``urlRequest``): by a request modifier, by `URLSessionTransport`, by
/// ``HTTPResponse/request``.
///
/// A request made from a `URLRequest` keeps that request's other settings (timeout interval,
/// cache policy, cookie handling, a body stream…), and ``urlRequest`` gives them back.
///
/// Header fields keep the order and the spelling they were given in; names match
/// case-insensitively, as HTTP's do. A `URLRequest` holds one value per name, so fields repeated
/// under one name are joined with `", "` in ``urlRequest`` (RFC 9110, section 5.3).
public struct TransportRequest: Sendable {
    /// The fields, behind one reference: a request is handed from stage to stage and kept by its
    /// response, and each copy then costs one reference count instead of one per field.
    /// Copied on write, so the value semantics are a struct's.
    private final class Storage: @unchecked Sendable {
        // Mutated only through a uniquely referenced storage (``TransportRequest/unique()``),
        // so no two threads ever see one storage change.
        var method: HTTPMethod
        var url: URL?
        var headerFields: [HTTPField]
        var body: Data?
        var bodyFile: URL?
        var responseBodyFile: ResponseBodyFile?
        var settings: URLRequest?
        var changed: Bool

        init(
            method: HTTPMethod, url: URL?, headerFields: [HTTPField], body: Data?, bodyFile: URL?,
            responseBodyFile: ResponseBodyFile?, settings: URLRequest?, changed: Bool
        ) {
            self.method = method
            self.url = url
            self.headerFields = headerFields
            self.body = body
            self.bodyFile = bodyFile
            self.responseBodyFile = responseBodyFile
            self.settings = settings
            self.changed = changed
        }

        func copy() -> Storage {
            Storage(
                method: method, url: url, headerFields: headerFields, body: body, bodyFile: bodyFile,
                responseBodyFile: responseBodyFile, settings: settings, changed: changed
            )
        }
    }

    private var storage: Storage

    /// The storage, copied first if another request shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// The method.
    public var method: HTTPMethod {
        get { storage.method }
        set {
            let storage = unique()
            storage.method = newValue
            storage.changed = true
        }
    }

    /// The URL (`nil` only for a request made from a `URLRequest` without one, which the client
    /// refuses with ``URLRequestError/invalidURL`` before anything is sent).
    public var url: URL? {
        get { storage.url }
        set {
            let storage = unique()
            storage.url = newValue
            storage.changed = true
        }
    }

    /// The header fields, in order.
    public var headerFields: [HTTPField] {
        get { storage.headerFields }
        _modify {
            let storage = unique()
            storage.changed = true
            yield &storage.headerFields
        }
    }

    /// The body held in memory, if any. When ``bodyFile`` is set, it is the body instead.
    public var body: Data? {
        get { storage.body }
        set {
            let storage = unique()
            storage.body = newValue
            storage.changed = true
        }
    }

    /// A file whose contents are the body, streamed from disk without being read into memory.
    /// When set, ``body`` is ignored.
    public var bodyFile: URL? {
        get { storage.bodyFile }
        set { unique().bodyFile = newValue }
    }

    /// Where a transport whose ``HTTPTransport/writesResponseBodiesToFiles`` is `true` writes
    /// the response body itself, instead of delivering it as ``HTTPResponsePart/body(_:)``
    /// parts. Other transports ignore it. ``HTTPClient`` sets it for downloads only.
    public var responseBodyFile: ResponseBodyFile? {
        get { storage.responseBodyFile }
        set { unique().responseBodyFile = newValue }
    }

    /// The `URLRequest` this request was made from, for the settings beyond the four fields
    /// above; `nil` for a request Transit built itself (Foundation's defaults).
    var settings: URLRequest? { storage.settings }

    /// A request of `method` to `url`, with `headerFields` and `body`.
    public init(
        method: HTTPMethod = .get,
        url: URL,
        headerFields: [HTTPField] = [],
        body: Data? = nil,
        bodyFile: URL? = nil,
        responseBodyFile: ResponseBodyFile? = nil
    ) {
        storage = Storage(
            method: method, url: url, headerFields: headerFields, body: body, bodyFile: bodyFile,
            responseBodyFile: responseBodyFile, settings: nil, changed: false
        )
    }

    /// The request `urlRequest` describes (its method, URL, header fields and `httpBody`; its
    /// other settings are kept for ``urlRequest``), with its body streamed from `bodyFile` when
    /// given.
    public init(_ urlRequest: URLRequest, bodyFile: URL? = nil, responseBodyFile: ResponseBodyFile? = nil) {
        storage = Storage(
            method: urlRequest.httpMethod.map { HTTPMethod(rawValue: $0) } ?? .get,
            url: urlRequest.url,
            headerFields: (urlRequest.allHTTPHeaderFields ?? [:]).map { HTTPField(name: $0.key, value: $0.value) },
            body: urlRequest.httpBody,
            bodyFile: bodyFile,
            responseBodyFile: responseBodyFile,
            settings: urlRequest,
            // The fields are the URLRequest's own: it is given back as it is until one changes.
            changed: false
        )
    }

    /// The request as a Foundation `URLRequest`: the settings of the `URLRequest` it was made
    /// from (Foundation's defaults otherwise), with this request's method, URL, header fields and
    /// body. Setting it replaces all of them; ``bodyFile`` and ``responseBodyFile`` stay.
    public var urlRequest: URLRequest {
        get {
            var request: URLRequest
            if let settings {
                if !storage.changed { return settings }
                request = settings
                if request.url != url { request.url = url }
            } else if let url {
                request = URLRequest(url: url)
            } else {
                // A request Transit built whose URL was then removed: Foundation makes a
                // `URLRequest` only from a URL, so one is made and taken away again.
                request = URLRequest(url: URL(fileURLWithPath: "/"))
                request.url = nil
            }
            let currentMethod = request.httpMethod ?? "GET"
            if currentMethod != method.rawValue { request.httpMethod = method.rawValue }
            let fields = Self.dictionary(of: headerFields)
            if (request.allHTTPHeaderFields ?? [:]) != fields { request.allHTTPHeaderFields = fields }
            if request.httpBody != body { request.httpBody = body }
            return request
        }
        set {
            self = TransportRequest(newValue, bodyFile: bodyFile, responseBodyFile: responseBodyFile)
        }
    }

    /// The idle timeout a transport applies: the `timeoutInterval` of the `URLRequest` this
    /// request was made from, else Foundation's default of 60 seconds.
    public var timeoutInterval: TimeInterval {
        settings?.timeoutInterval ?? 60
    }

    /// The `httpBodyStream` of the `URLRequest` this request was made from, if any. Transit's
    /// client refuses such a request (``URLRequestError/bodyStreamNotSupported``); a transport
    /// given one directly should refuse it too rather than send it without its body.
    public var bodyStream: InputStream? {
        settings?.httpBodyStream
    }

    /// The value of the header field `name` (matched case-insensitively), the values of a
    /// repeated field joined with `", "`; `nil` if the request has none.
    func value(forHTTPHeaderField name: String) -> String? {
        var joined: String?
        for field in headerFields where HTTPSyntax.sameFieldName(field.name, name) {
            joined = joined.map { $0 + ", " + field.value } ?? field.value
        }
        return joined
    }

    /// Sets the header field `name` to `value` (both already checked), replacing every field of
    /// that name in any case, at the place of the first one; a `nil` value removes them.
    mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        let first = headerFields.firstIndex { HTTPSyntax.sameFieldName($0.name, name) }
        if first != nil { headerFields.removeAll { HTTPSyntax.sameFieldName($0.name, name) } }
        guard let value else { return }
        // No field before `first` had the name, so it is still the place of the first one.
        headerFields.insert(HTTPField(name: name, value: value), at: first ?? headerFields.endIndex)
    }

    /// The fields as a `URLRequest` holds them: one value per name (the first spelling of the
    /// name), repeated fields joined with `", "`.
    static func dictionary(of fields: [HTTPField]) -> [String: String] {
        var dictionary: [String: String] = [:]
        dictionary.reserveCapacity(fields.count)
        var seen: [(lowercased: String, key: String)] = []
        for field in fields {
            let lowercased = field.name.lowercased()
            if let existing = seen.first(where: { $0.lowercased == lowercased }) {
                dictionary[existing.key] = dictionary[existing.key].map { $0 + ", " + field.value } ?? field.value
            } else {
                seen.append((lowercased, field.name))
                dictionary[field.name] = field.value
            }
        }
        return dictionary
    }
}

extension TransportRequest: CustomStringConvertible, CustomReflectable {
    /// The method and the URL, secrets in the URL redacted: `GET https://api.example.com/me`.
    /// Header values and the body are never shown: they may carry credentials.
    public var description: String {
        "\(method.rawValue) \(url.map(Redaction.redact(url:)) ?? "(no URL)")"
    }

    /// The method, the URL (redacted), the names of the header fields and the size of the body:
    /// what `dump` and debuggers show, without a value that may carry credentials.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "method": method.rawValue,
            "url": url.map(Redaction.redact(url:)) ?? "(no URL)",
            "headerFieldNames": headerFields.map(\.name),
            "body": body.map { "\($0.count) bytes" } ?? bodyFile.map { "file \($0.lastPathComponent)" } ?? "none",
        ], displayStyle: .struct)
    }
}

/// Where a transport writes a response body, and whom it tells how far it is.
///
/// The contract, for a transport whose ``HTTPTransport/writesResponseBodiesToFiles`` is `true`:
/// the body of the response, whatever its status, is written to ``url`` (created, or replaced if
/// a file is there) before `finished`, and no ``HTTPResponsePart/body(_:)`` part is delivered;
/// ``progress`` is called, from any thread, with the number of body bytes written so far and the
/// declared length when known. The transport writes on its own I/O path, so a slow disk holds the
/// network back instead of piling chunks up in memory. Progress may come before the head (on
/// Linux, `URLSession` gives a download task's response only when the body is complete). On
/// failure or cancellation the file may be missing or partial: its owner removes it.
public struct ResponseBodyFile: Sendable {
    /// Where the body is written.
    public let url: URL
    /// Told the number of body bytes written so far, and the declared length when known.
    public let progress: @Sendable (_ written: Int64, _ expected: Int64?) -> Void

    /// Creates a destination for a response body (the client makes one per download; transports
    /// only read it).
    package init(url: URL, progress: @escaping @Sendable (_ written: Int64, _ expected: Int64?) -> Void) {
        self.url = url
        self.progress = progress
    }
}
