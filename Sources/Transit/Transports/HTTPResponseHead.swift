import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// One header field of a response, as the server sent it.
public struct HTTPField: Sendable, Hashable {
    /// The field name, with the case the server sent.
    public let name: String
    /// The field value, without surrounding whitespace.
    public let value: String

    /// Creates a field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The status line and header fields of a response: the first part of every exchange
/// (``HTTPResponsePart/head(_:)``) and the head of every ``HTTPResponse``.
///
/// Transit's own type rather than Foundation's `HTTPURLResponse`, for two reasons:
/// - **It keeps what the server sent.** ``fields`` lists every header field in order, a field
///   sent twice (`Set-Cookie`, `Link`, `WWW-Authenticate`) twice; an `HTTPURLResponse` is built
///   from a dictionary and keeps one value per name. (A transport that only has an
///   `HTTPURLResponse`, such as `URLSessionTransport`, can only pass on what it was given.)
/// - **It costs nothing to make.** On Linux, `HTTPURLResponse.init` canonicalises every field
///   name through `NSString`, a large part of a loopback request on a fast transport
///   (`BENCHMARKS.md` measures it). The
///   `HTTPURLResponse` of a head is made only if ``urlResponse`` is read, and then once.
///
/// Lookups by name (``value(forHTTPHeaderField:)``) ignore case, as HTTP does, and join the
/// values of a repeated field with `", "` (RFC 9110, section 5.3).
///
/// Thread safety: immutable once made; ``urlResponse`` is made once under a lock.
public final class HTTPResponseHead: Sendable, CustomStringConvertible {
    /// The URL of the response (the request's URL, after redirects the final one).
    public let url: URL
    /// The HTTP status code.
    public let statusCode: Int
    /// Whether a redirect to another origin dropped credential headers on the way to the server
    /// that sent this head (see ``RedirectPolicy``): a 401 in it says nothing of the user's
    /// credentials, which that server never got.
    let credentialsDropped: Bool
    private let storage: Storage

    private enum Storage: Sendable {
        /// Fields as received, in order; the `HTTPURLResponse` made from them once read.
        case fields([HTTPField], made: Locked<HTTPURLResponse?>)
        /// A transport's `HTTPURLResponse`, used as it is.
        case foundation(HTTPURLResponse)
    }

    /// Creates a head from the fields the server sent, in order.
    ///
    /// - Parameters:
    ///   - url: the response's URL.
    ///   - statusCode: the status code.
    ///   - fields: the header fields, in the order received; repeated fields kept.
    public init(url: URL, statusCode: Int, fields: [HTTPField]) {
        self.url = url
        self.statusCode = statusCode
        credentialsDropped = false
        storage = .fields(fields, made: Locked(nil))
    }

    /// `head`, marked as the answer to a request whose credential headers a redirect to another
    /// origin dropped (its fields are shared, not copied).
    init(credentialsDroppedBefore head: HTTPResponseHead) {
        url = head.url
        statusCode = head.statusCode
        credentialsDropped = true
        storage = head.storage
    }

    /// Creates a head from a dictionary of header fields (one value per name; the order of the
    /// fields is the names' order): for the library's stubs and caches, which keep one value per
    /// name.
    package convenience init(url: URL, statusCode: Int, headerFields: [String: String] = [:]) {
        self.init(
            url: url,
            statusCode: statusCode,
            fields: headerFields.sorted { $0.key < $1.key }.map { HTTPField(name: $0.key, value: $0.value) }
        )
    }

    /// Creates a head that wraps a transport's `HTTPURLResponse` (nothing is copied).
    public init(_ response: HTTPURLResponse) {
        url = response.url ?? URL(fileURLWithPath: "/")
        statusCode = response.statusCode
        credentialsDropped = false
        storage = .foundation(response)
    }

    /// Every header field in the order received, a repeated field as often as it was sent. For a
    /// head made from an `HTTPURLResponse`, one field per name, sorted by name.
    public var fields: [HTTPField] {
        switch storage {
        case .fields(let fields, _):
            return fields
        case .foundation(let response):
            return response.allHeaderFields
                .map { HTTPField(name: "\($0.key)", value: "\($0.value)") }
                .sorted { $0.name < $1.name }
        }
    }

    /// The value of the header `field` (its name matched without regard to case); the values of
    /// a field sent more than once, joined with `", "`; `nil` if the server did not send it.
    public func value(forHTTPHeaderField field: String) -> String? {
        switch storage {
        case .foundation(let response):
            return response.value(forHTTPHeaderField: field)
        case .fields(let fields, _):
            var found: String?
            for candidate in fields where HTTPSyntax.sameFieldName(candidate.name, field) {
                found = found.map { "\($0), \(candidate.value)" } ?? candidate.value
            }
            return found
        }
    }

    /// Every value of the header `field`, one per time it was sent, in order.
    public func values(forHTTPHeaderField field: String) -> [String] {
        switch storage {
        case .foundation(let response):
            return response.value(forHTTPHeaderField: field).map { [$0] } ?? []
        case .fields(let fields, _):
            return fields.filter { HTTPSyntax.sameFieldName($0.name, field) }.map(\.value)
        }
    }

    /// The header fields as a dictionary, one value per name (repeated fields joined with
    /// `", "`), with the names the server sent. Names that are equal as Swift strings but not
    /// byte for byte (canonically equivalent Unicode, never valid tokens) share one entry, their
    /// values joined in the order received.
    public var allHeaderFields: [String: String] {
        switch storage {
        case .foundation(let response):
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields { headers["\(name)"] = "\(value)" }
            return headers
        case .fields(let fields, _):
            var headers: [String: String] = [:]
            var names: [String: String] = [:]  // ASCII-lowercased name → the first spelling seen
            for field in fields {
                // ASCII case only, as value(forHTTPHeaderField:) matches (field names are tokens;
                // Unicode lowercasing would join names that lookups keep apart).
                let key = String(decoding: field.name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
                let name = names[key] ?? field.name
                if names[key] == nil { names[key] = name }
                // Joined even for a name seen the first time: two names whose bytes differ can
                // still be one key of a String dictionary (`X-\u{212A}` and `X-K` are
                // canonically equivalent), and the second must not replace the first's value.
                headers[name] = headers[name].map { "\($0), \(field.value)" } ?? field.value
            }
            return headers
        }
    }

    /// The body length the head declares (`Content-Length`), or -1 when it declares none or a
    /// value that is not one non-negative decimal number (conflicting repeated values included).
    /// What a caller reads of it is the `Content-Length` field and, for a download,
    /// ``DownloadProgress/expectedBytes``.
    package var expectedContentLength: Int64 {
        switch storage {
        case .foundation(let response):
            return response.expectedContentLength
        case .fields(let fields, _):
            // Every Content-Length field, and every comma-separated element of each, must be the
            // same decimal number (`12, 12` is accepted, as RFC 9110 §8.6 allows). Read as bytes:
            // Foundation's trimming and splitting cost microseconds per response.
            var length: Int64?
            for field in fields where HTTPSyntax.sameFieldName(field.name, "Content-Length") {
                var current: Int64 = 0
                var digits = 0
                var trailingSpace = false
                for byte in field.value.utf8 {
                    switch byte {
                    case 0x30...0x39:
                        guard !trailingSpace, digits < 18 else { return -1 }
                        current = current * 10 + Int64(byte - 0x30)
                        digits += 1
                    case 0x20, 0x09:
                        if digits > 0 { trailingSpace = true }
                    case 0x2C:  // ","
                        guard digits > 0, length == nil || length == current else { return -1 }
                        length = current
                        current = 0
                        digits = 0
                        trailingSpace = false
                    default:
                        return -1
                    }
                }
                guard digits > 0, length == nil || length == current else { return -1 }
                length = current
            }
            return length ?? -1
        }
    }

    /// The head as Foundation's `HTTPURLResponse` (one value per field name), made the first
    /// time it is read.
    public var urlResponse: HTTPURLResponse {
        let madeResponse: Locked<HTTPURLResponse?>
        switch storage {
        case .foundation(let response): return response
        case .fields(_, let made): madeResponse = made
        }
        if let made = madeResponse.withLock({ $0 }) { return made }
        let made = HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: allHeaderFields)
            ?? HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: nil)!
        return madeResponse.withLock { current in
            if let current { return current }
            current = made
            return made
        }
    }

    /// The status and the field names (not their values, which may carry credentials), and the
    /// URL with any credentials redacted.
    public var description: String {
        let names = fields.map(\.name).joined(separator: ", ")
        return "HTTPResponseHead(\(statusCode), \(Redaction.redact(url: url)), fields: [\(names)])"
    }
}
