import Foundation
import Transit

/// What a ``LoopbackServer`` does with one request: answer it (at once or after a delay, with a
/// whole body or a chunked one that trickles out), close the connection half-way through the
/// body, or drop the connection without answering.
///
/// Build one with a factory (``status(_:headers:body:)``, ``text(_:status:headers:)``,
/// ``json(_:status:headers:)``,
/// ``chunked(_:interval:status:headers:)``, ``paced(_:interval:status:headers:)``,
/// ``ranged(_:for:etag:lastModified:headers:)`` for byte ranges, ``raw(_:)``,
/// ``dropConnection``, ``LoopbackResponse/scripted(status:headers:contentLength:_:)`` for a body
/// the test sends step by step) and adjust it with the modifiers (``delayed(by:)``,
/// ``closingMidBody(afterBytes:)``); a `Connection: close` header closes the connection after it. The status line's reason phrase
/// (``reason``) and the exact header fields in order, repeated ones included (``headers``), can
/// be set on the value. Delays are real wall-clock time: the server is a real server.
public struct LoopbackResponse: Sendable {
    /// How the body goes out.
    enum Body: Sendable {
        /// In one piece, with a `Content-Length` header (unless the response sets its own).
        case whole(Data)
        /// With `Transfer-Encoding: chunked`, one chunk per element, waiting `interval` between
        /// chunks. Empty elements are skipped (an empty chunk would end the body).
        case chunked([Data], interval: Duration)
        /// With a `Content-Length` for the whole body, sent in these pieces with `interval`
        /// between them (a large download arriving at a known pace).
        case paced([Data], interval: Duration)
        /// Exactly these bytes and nothing else: no status line, no headers (see
        /// ``LoopbackResponse/raw(_:)``).
        case raw(Data)
        /// Sent step by step, as the test controls it (see
        /// ``LoopbackResponse/scripted(status:headers:contentLength:_:)``): with
        /// `Content-Length: contentLength`, or chunked when it is `nil`.
        case scripted([LoopbackStep], contentLength: Int?)

        /// Every byte of the body, in order.
        var data: Data {
            switch self {
            case .whole(let data), .raw(let data): return data
            case .chunked(let chunks, _), .paced(let chunks, _): return chunks.reduce(into: Data()) { $0.append($1) }
            case .scripted(let steps, _): return steps.reduce(into: Data()) { if case .send(let data) = $1 { $0.append(data) } }
            }
        }
    }

    /// How the exchange ends.
    enum Ending: Sendable, Equatable {
        /// The whole response is sent.
        case complete
        /// The connection is closed after `afterBytes` bytes of the body, before the body is
        /// complete (a `Content-Length` or the chunk sizes announce the full body).
        case closeMidBody(afterBytes: Int)
        /// The connection is closed without sending anything.
        case dropConnection
    }

    /// The status code.
    var status: Int
    /// The reason phrase on the status line; `nil` uses the standard phrase for the status (the
    /// one Transit's `HTTPClientError.reasonPhrase` gives).
    public var reason: String?
    /// Header fields, sent in this order (a field may repeat). `Content-Length`,
    /// `Transfer-Encoding` and `Connection: close` are added when needed unless already present.
    /// A `Connection: close` field here makes the server close the connection after the response,
    /// as HTTP/1.1 requires (RFC 9112 §9.6), whatever the client asked for.
    public var headers: [HTTPField]
    /// The body.
    var body: Body
    /// How long the server waits, after reading the request, before it starts answering.
    var delay: Duration = .zero
    /// How the exchange ends.
    var ending: Ending = .complete
    /// `true` to close the connection after this response even if the client wants to keep it.
    var closesConnection = false

    /// `true` if the server closes the connection after this response: it was made to, or its
    /// header fields say `Connection: close`.
    var closesAfterward: Bool {
        closesConnection || headers.contains { field in
            HTTPSyntax.sameFieldName(field.name, "Connection")
                && field.value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "close" }
        }
    }

    /// Creates a response with every field given.
    init(status: Int, reason: String? = nil, headers: [HTTPField] = [], body: Body = .whole(Data())) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    private static func fields(_ headers: [String: String]) -> [HTTPField] {
        headers.sorted { $0.key < $1.key }.map { HTTPField(name: $0.key, value: $0.value) }
    }

    /// A response with `status`, `headers` (sent sorted by name; set ``headers`` for another
    /// order or a repeated field) and `body`, sent in one piece with a `Content-Length`.
    public static func status(_ status: Int, headers: [String: String] = [:], body: Data = Data()) -> LoopbackResponse {
        LoopbackResponse(status: status, headers: fields(headers), body: .whole(body))
    }

    /// A response whose body is `text`, UTF-8 encoded, with `Content-Type: text/plain;
    /// charset=utf-8` unless `headers` names another.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> LoopbackResponse {
        var headers = headers
        if !headers.keys.contains(where: { HTTPSyntax.sameFieldName($0, "Content-Type") }) {
            headers["Content-Type"] = "text/plain; charset=utf-8"
        }
        return .status(status, headers: headers, body: Data(text.utf8))
    }

    /// A response whose body is `json` (a JSON document as text), with
    /// `Content-Type: application/json` unless `headers` names another. For an `Encodable`
    /// value, `.status(200, headers: ["Content-Type": "application/json"], body: try JSONEncoder().encode(value))`.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> LoopbackResponse {
        var headers = headers
        if !headers.keys.contains(where: { HTTPSyntax.sameFieldName($0, "Content-Type") }) {
            headers["Content-Type"] = "application/json"
        }
        return .status(status, headers: headers, body: Data(json.utf8))
    }

    /// A response with a chunked body: each element of `chunks` is one chunk on the wire, and
    /// the server waits `interval` between chunks (so a client sees the body arrive in pieces).
    public static func chunked(
        _ chunks: [Data],
        interval: Duration = .zero,
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> LoopbackResponse {
        LoopbackResponse(status: status, headers: fields(headers), body: .chunked(chunks, interval: interval))
    }

    /// A response whose body (`Content-Length` announced) goes out in `pieces`, `interval`
    /// apart: a download whose progress a client can watch.
    public static func paced(
        _ pieces: [Data],
        interval: Duration,
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> LoopbackResponse {
        LoopbackResponse(status: status, headers: fields(headers), body: .paced(pieces, interval: interval))
    }

    /// The answer of a server that serves `representation` with byte ranges, to `request`: a
    /// server a resumable download can continue against.
    ///
    /// Every answer carries `Accept-Ranges: bytes` and the validators given (`etag`, a quoted
    /// entity tag such as `"\"v1\""`, and `lastModified`), plus `headers`. A request with a
    /// single `Range: bytes=<first>-[<last>]` is answered `206 Partial Content` with those bytes
    /// and `Content-Range: bytes <first>-<last>/<length>`, unless it has an `If-Range` that is
    /// not the current `etag` (compared strongly) or `lastModified`: then the whole
    /// representation is sent with `200`. A range that starts at or past the end is answered
    /// `416` with `Content-Range: bytes */<length>`. Anything else (no `Range`, another unit,
    /// several ranges, a malformed one) gets the whole representation with `200`.
    public static func ranged(
        _ representation: Data,
        for request: LoopbackRequest,
        etag: String? = nil,
        lastModified: String? = nil,
        headers: [String: String] = [:]
    ) -> LoopbackResponse {
        var fields = headers
        fields["Accept-Ranges"] = "bytes"
        if let etag { fields["ETag"] = etag }
        if let lastModified { fields["Last-Modified"] = lastModified }
        let whole = LoopbackResponse.status(200, headers: fields, body: representation)
        guard let rangeValue = request.value(forHTTPHeaderField: "Range"),
              let range = singleByteRange(rangeValue) else { return whole }
        if let condition = request.value(forHTTPHeaderField: "If-Range") {
            let matchesTag = etag.map { !$0.hasPrefix("W/") && !condition.hasPrefix("W/") && $0 == condition } ?? false
            let matchesDate = lastModified == condition
            guard matchesTag || matchesDate else { return whole }
        }
        let length = representation.count
        guard range.first < length else {
            fields["Content-Range"] = "bytes */\(length)"
            return .status(416, headers: fields)
        }
        let last = min(range.last ?? (length - 1), length - 1)
        guard range.first <= last else { return whole }
        fields["Content-Range"] = "bytes \(range.first)-\(last)/\(length)"
        return .status(206, headers: fields, body: representation.subdata(in: range.first..<(last + 1)))
    }

    /// `bytes=<first>-[<last>]`, one range only; `nil` for anything else.
    private static func singleByteRange(_ value: String) -> (first: Int, last: Int?)? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), !trimmed.contains(",") else { return nil }
        let bounds = trimmed.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, bounds[0].count <= 18, let first = Int(bounds[0]), first >= 0 else { return nil }
        if bounds[1].isEmpty { return (first, nil) }
        guard bounds[1].count <= 18, let last = Int(bounds[1]), last >= first else { return nil }
        return (first, last)
    }

    /// Sends exactly `bytes` (a malformed or hand-written response) and closes the connection.
    public static func raw(_ bytes: Data) -> LoopbackResponse {
        var response = LoopbackResponse(status: 0, body: .raw(bytes))
        response.closesConnection = true
        return response
    }

    /// Closes the connection without answering (after the delay of ``delayed(by:)``, if one is
    /// set).
    public static var dropConnection: LoopbackResponse {
        var response = LoopbackResponse(status: 0)
        response.ending = .dropConnection
        return response
    }

    /// The same response, sent after waiting `delay` of real time. ``LoopbackServer/stop()``
    /// interrupts the wait at once.
    public func delayed(by delay: Duration) -> LoopbackResponse {
        var copy = self
        copy.delay = delay
        return copy
    }

    /// The same response, but the connection is closed after `afterBytes` bytes of the body
    /// (the headers announce the whole body), so the client sees a truncated transfer. A chunked
    /// body never gets its last (empty) chunk, so it is truncated even if every byte was sent.
    public func closingMidBody(afterBytes: Int) -> LoopbackResponse {
        var copy = self
        copy.ending = .closeMidBody(afterBytes: max(0, afterBytes))
        return copy
    }

    /// `true` if a response with this status to a request with `method` carries no body
    /// (RFC 9110 §6.4.1).
    func hasNoBody(forMethod method: String) -> Bool {
        method == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304
    }

    /// The status line and header section, with the framing headers added.
    func head(forMethod method: String, closing: Bool) -> [UInt8] {
        if case .raw = body { return [] }
        var fields = headers
        let has = { (name: String) in fields.contains { HTTPSyntax.sameFieldName($0.name, name) } }
        if !hasNoBody(forMethod: method) || method == "HEAD" {
            switch body {
            case .whole(let data):
                if !has("Content-Length"), !has("Transfer-Encoding") {
                    fields.append(HTTPField(name: "Content-Length", value: "\(data.count)"))
                }
            case .chunked:
                if !has("Transfer-Encoding") {
                    fields.append(HTTPField(name: "Transfer-Encoding", value: "chunked"))
                }
            case .paced(let pieces, _):
                if !has("Content-Length"), !has("Transfer-Encoding") {
                    fields.append(HTTPField(name: "Content-Length", value: "\(pieces.reduce(0) { $0 + $1.count })"))
                }
            case .scripted(_, let length?):
                if !has("Content-Length"), !has("Transfer-Encoding") {
                    fields.append(HTTPField(name: "Content-Length", value: "\(length)"))
                }
            case .scripted(_, nil):
                if !has("Transfer-Encoding") {
                    fields.append(HTTPField(name: "Transfer-Encoding", value: "chunked"))
                }
            case .raw:
                break
            }
        }
        if closing, !has("Connection") {
            fields.append(HTTPField(name: "Connection", value: "close"))
        }
        var text = "HTTP/1.1 \(status) \(reason ?? HTTPStatus.reasonPhrase(status))\r\n"
        for field in fields {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }
}
