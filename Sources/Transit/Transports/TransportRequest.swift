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
    /// The four fields of a request Transit built.
    struct Fields {
        var method: HTTPMethod
        var url: URL?
        var headerFields: [HTTPField]
        var body: Data?
    }

    /// A request's fields behind one reference: a request is handed from stage to stage and kept
    /// by its response, and each copy then costs one reference count, not one per field. Copied
    /// on write (``TransportRequest/change(fields:urlRequest:)``), so the value semantics are a
    /// struct's.
    final class FieldsBox: @unchecked Sendable {
        // Changed only while uniquely referenced, so no two threads ever see one box change.
        var fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    /// What a request is made of: its own fields, or the `URLRequest` it was given (read and
    /// changed through Foundation, so a request that arrives as a `URLRequest` — from a modifier,
    /// from ``HTTPClient/send(_:bodyFile:options:)`` — is never taken apart and put together
    /// again). Either way one reference.
    enum Form {
        case fields(FieldsBox)
        case foundation(URLRequest)
        /// Only while the request changes, so that the box or the `URLRequest` being changed is
        /// referenced once.
        case moving
    }

    /// What the request is made of.
    private(set) var form: Form

    /// Whether the request is made from a `URLRequest` (read without copying it).
    var isMadeFromURLRequest: Bool {
        if case .foundation = form { return true }
        return false
    }

    /// Changes the request's fields: its own (copied first if another request shares them), or
    /// those of the `URLRequest` it was given, in place (Linux Foundation copies the whole request
    /// when a shared one changes).
    private mutating func change(fields: (inout Fields) -> Void, urlRequest: (inout URLRequest) -> Void) {
        switch form {
        case .fields(var box):
            form = .moving
            if !isKnownUniquelyReferenced(&box) { box = FieldsBox(box.fields) }
            fields(&box.fields)
            form = .fields(box)
        case .foundation(var request):
            form = .moving
            urlRequest(&request)
            form = .foundation(request)
        case .moving:
            preconditionFailure("a request changed while it changes")
        }
    }

    /// The method.
    public var method: HTTPMethod {
        get {
            switch form {
            case .fields(let box): box.fields.method
            case .foundation(let request): request.httpMethod.map { HTTPMethod(rawValue: $0) } ?? .get
            case .moving: preconditionFailure("a request read while it changes")
            }
        }
        set {
            change(fields: { $0.method = newValue }, urlRequest: { $0.httpMethod = newValue.rawValue })
        }
    }

    /// The URL (`nil` only for a request made from a `URLRequest` without one, which the client
    /// refuses with ``URLRequestError/invalidURL`` before anything is sent).
    public var url: URL? {
        get {
            switch form {
            case .fields(let box): box.fields.url
            case .foundation(let request): request.url
            case .moving: preconditionFailure("a request read while it changes")
            }
        }
        set {
            change(fields: { $0.url = newValue }, urlRequest: { $0.url = newValue })
        }
    }

    /// The header fields, in order. (A request made from a `URLRequest` has them in the order of
    /// its header dictionary, one per name; setting fields repeated under one name there joins
    /// their values with `", "`.)
    public var headerFields: [HTTPField] {
        get {
            switch form {
            case .fields(let box): box.fields.headerFields
            case .foundation(let request): Self.fields(of: request)
            case .moving: preconditionFailure("a request read while it changes")
            }
        }
        set {
            change(fields: { $0.headerFields = newValue }, urlRequest: { $0.allHTTPHeaderFields = Self.dictionary(of: newValue) })
        }
    }

    /// The body held in memory, if any. When ``bodyFile`` is set, it is the body instead.
    public var body: Data? {
        get {
            switch form {
            case .fields(let box): box.fields.body
            case .foundation(let request): request.httpBody
            case .moving: preconditionFailure("a request read while it changes")
            }
        }
        set {
            change(fields: { $0.body = newValue }, urlRequest: { $0.httpBody = newValue })
        }
    }

    /// A file whose contents are the body, streamed from disk without being read into memory.
    /// When set, ``body`` is ignored.
    public var bodyFile: URL?

    /// Where a transport whose ``HTTPTransport/writesResponseBodiesToFiles`` is `true` writes
    /// the response body itself, instead of delivering it as ``HTTPResponsePart/body(_:)``
    /// parts. Other transports ignore it. ``HTTPClient`` sets it for downloads only.
    public var responseBodyFile: ResponseBodyFile?

    /// Names of header fields whose values are secrets of the sender's own, beyond those
    /// ``Redaction`` recognises (`Authorization`, `Proxy-Authorization`, `Cookie`, `X-API-Key`,
    /// `X-Auth-Token`, …), kept lower-cased. ``HTTPClient`` puts its
    /// ``HTTPClient/Configuration/sensitiveHeaders`` here on every request it sends, so that a
    /// transport decorator keeping anything of a request treats them as credentials: the HTTP
    /// cache of TransitCache partitions its stored responses by their values and never writes
    /// them to disk. Empty by default; set it yourself when you send through a transport without
    /// a client.
    public var sensitiveHeaders: Set<String> {
        get { secretNames }
        set { secretNames = Set(newValue.map { $0.lowercased() }) }
    }

    /// ``sensitiveHeaders``, lower-cased.
    private var secretNames: Set<String> = []

    /// Where a transport reports how much of the body it has sent (see ``RequestBodyProgress``).
    /// Transports that cannot count ignore it. ``HTTPClient`` sets it for uploads observed with
    /// ``HTTPClient/upload(_:bodyFile:options:)`` only; it is kept across redirects and by
    /// ``urlRequest``'s setter, like the files.
    public var bodyProgress: RequestBodyProgress?

    /// A request of `method` to `url`, with `headerFields` and `body`.
    public init(
        method: HTTPMethod = .get,
        url: URL,
        headerFields: [HTTPField] = [],
        body: Data? = nil,
        bodyFile: URL? = nil,
        responseBodyFile: ResponseBodyFile? = nil
    ) {
        form = .fields(FieldsBox(Fields(method: method, url: url, headerFields: headerFields, body: body)))
        self.bodyFile = bodyFile
        self.responseBodyFile = responseBodyFile
    }

    /// A request made of `form`, without files.
    init(form: Form) {
        self.form = form
    }

    /// The request `urlRequest` describes, every setting of it kept, with its body streamed
    /// from `bodyFile` when given.
    public init(_ urlRequest: URLRequest, bodyFile: URL? = nil, responseBodyFile: ResponseBodyFile? = nil) {
        form = .foundation(urlRequest)
        self.bodyFile = bodyFile
        self.responseBodyFile = responseBodyFile
    }

    /// The request as a Foundation `URLRequest`: the one it was made from (with any change made
    /// since), or, for a request Transit built, one with Foundation's defaults and this request's
    /// method, URL, header fields and body. Setting it replaces all of them; ``bodyFile`` and
    /// ``responseBodyFile`` stay.
    public var urlRequest: URLRequest {
        get {
            switch form {
            case .foundation(let request):
                return request
            case .fields(let box):
                let own = box.fields
                var request: URLRequest
                if let url = own.url {
                    request = URLRequest(url: url)
                } else {
                    // A request Transit built whose URL was then removed: Foundation makes a
                    // `URLRequest` only from a URL, so one is made and taken away again.
                    request = URLRequest(url: URL(fileURLWithPath: "/"))
                    request.url = nil
                }
                if own.method != .get { request.httpMethod = own.method.rawValue }
                if !own.headerFields.isEmpty { request.allHTTPHeaderFields = Self.dictionary(of: own.headerFields) }
                if let body = own.body { request.httpBody = body }
                return request
            case .moving:
                preconditionFailure("a request read while it changes")
            }
        }
        set {
            form = .foundation(newValue)
        }
    }

    /// Changes the `URLRequest` of a request made from one in place; a request Transit built is
    /// made a `URLRequest` first.
    mutating func changeURLRequest<Result>(_ body: (inout URLRequest) throws -> Result) rethrows -> Result {
        holdAsURLRequest()
        guard case .foundation(var request) = form else { preconditionFailure("a request changed while it changes") }
        form = .moving
        defer { form = .foundation(request) }
        return try body(&request)
    }

    /// Holds a request Transit built as the `URLRequest` it makes, so that readers of
    /// ``urlRequest`` from then on share one instead of each making its own.
    mutating func holdAsURLRequest() {
        if case .fields = form { form = .foundation(urlRequest) }
    }

    /// Appends `fields` to the request's header fields (already checked, and not among them).
    mutating func append(_ fields: [HTTPField]) {
        change(fields: { $0.headerFields += fields }, urlRequest: { request in
            for field in fields { request.setValue(field.value, forHTTPHeaderField: field.name) }
        })
    }

    /// The idle timeout a transport applies: the `timeoutInterval` of the `URLRequest` this
    /// request was made from, else Foundation's default of 60 seconds.
    public var timeoutInterval: TimeInterval {
        if case .foundation(let request) = form { return request.timeoutInterval }
        return 60
    }

    /// The `httpBodyStream` of the `URLRequest` this request was made from, if any. Transit's
    /// client refuses such a request (``URLRequestError/bodyStreamNotSupported``); a transport
    /// given one directly should refuse it too rather than send it without its body.
    public var bodyStream: InputStream? {
        if case .foundation(let request) = form { return request.httpBodyStream }
        return nil
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
    /// that name in any case, at the place of the first one; a `nil` value removes them. Then
    /// appends `fields` (as ``append(_:)``): the fields of a request made of its own are built
    /// once, in one array sized for them.
    mutating func setValue(_ value: String?, forHTTPHeaderField name: String, appending fields: [HTTPField] = []) {
        change(fields: { own in
            var changed: [HTTPField] = []
            changed.reserveCapacity(own.headerFields.count + 1 + fields.count)
            var placed = value == nil
            for field in own.headerFields {
                guard HTTPSyntax.sameFieldName(field.name, name) else {
                    changed.append(field)
                    continue
                }
                if !placed, let value { changed.append(HTTPField(name: name, value: value)) }
                placed = true
            }
            if !placed, let value { changed.append(HTTPField(name: name, value: value)) }
            changed += fields
            own.headerFields = changed
        }, urlRequest: { request in
            if let value {
                request.setCheckedHeader(value, canonicalName: name)
            } else {
                request.setValue(nil, forHTTPHeaderField: name)
            }
            for field in fields { request.setValue(field.value, forHTTPHeaderField: field.name) }
        })
    }

    /// The fields of `request`'s header dictionary.
    static func fields(of request: URLRequest) -> [HTTPField] {
        guard let dictionary = request.allHTTPHeaderFields, !dictionary.isEmpty else { return [] }
        return dictionary.map { HTTPField(name: $0.key, value: $0.value) }
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

extension TransportRequest: CustomStringConvertible, CustomReflectable, RedactedReflection {
    /// The method and the URL, secrets in the URL redacted: `GET https://api.example.com/me`.
    /// Header values and the body are never shown, nor in `dump` and debuggers: they may carry
    /// credentials.
    public var description: String {
        "\(method.rawValue) \(url.map(Redaction.redact(url:)) ?? "(no URL)")"
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
