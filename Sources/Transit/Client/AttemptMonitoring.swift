import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization

/// Watches one exchange with the transport and reports it as
/// ``HTTPEvent/Kind/attemptStarted(id:)`` and one ``HTTPEvent/Kind/attemptEnded(_:)``.
enum AttemptMonitoring {
    /// The exchange of `request` that `exchange` makes, reported to `sink`, as a stage of its own:
    /// for an exchange that no redirect-following hop drives (the hop reports its attempts
    /// itself, with ``AttemptReport``).
    static func signal(
        request: TransportRequest,
        sink: HTTPEventSink,
        exchange: @escaping @Sendable (TransportRequest) -> Signal<HTTPResponsePart, any Error>
    ) -> Signal<HTTPResponsePart, any Error> {
        Signal { observer in
            let (report, monitored) = AttemptReport.start(request, sink: sink)
            let scope = CancellationToken()
            exchange(monitored).observe(Observer { event in
                report.receive(event)
                observer.send(event)
            }, in: scope)
            return {
                scope.cancel()
                report.end(.cancelled)
            }
        }
    }
}

/// One attempt reported to the monitors: started when made, ended once — completed or failed
/// when its exchange ends (before that end is passed on), redirected when the hop follows its
/// redirect, cancelled when the scope it is registered in is cancelled first.
///
/// Thread safety: the mutable state is behind a lock; the end is claimed under it, once.
final class AttemptReport: Cancellable, Sendable {
    private struct State {
        var head: HTTPResponseHead?
        var headAt: Duration?
        var receivedBody: Int64 = 0
        var ended = false
    }

    private let sink: HTTPEventSink
    private let id: UInt64
    private let startedAt: Duration
    private let resendCount: Int
    /// The request as it went out (with the monitors' fields), for the end's event.
    private let sent: TransportRequest.Form
    private let sentHead: Int
    private let sentBody: Int64
    private let state = Locked(State())

    private init(sink: HTTPEventSink, id: UInt64, startedAt: Duration, resendCount: Int, sent: TransportRequest.Form, sentHead: Int, sentBody: Int64) {
        self.sink = sink
        self.id = id
        self.startedAt = startedAt
        self.resendCount = resendCount
        self.sent = sent
        self.sentHead = sentHead
        self.sentBody = sentBody
    }

    /// Reports the start of an attempt to send `request`, and returns its report and the request
    /// to send: with the monitors' fields (trace context), which replace any of the same name, and
    /// a body the transport writes to a file counted from its progress.
    static func start(_ request: TransportRequest, sink: HTTPEventSink) -> (report: AttemptReport, sent: TransportRequest) {
        var monitored = request
        let id = sink.nextAttemptID()
        let startedAt = sink.scheduler.now
        let (resendCount, fields) = sink.startAttempt(id, request: request.form)
        for field in fields where URLRequest.checkHeader(field.name, field.value) == nil {
            monitored.setValue(field.value, forHTTPHeaderField: field.name)
        }
        let sentBody = HTTPWireSize.requestBody(request)
        let report = AttemptReport(
            sink: sink, id: id, startedAt: startedAt, resendCount: resendCount,
            sent: (fields.isEmpty ? request : monitored).form,
            sentHead: HTTPWireSize.requestHead(monitored, bodyBytes: sentBody), sentBody: sentBody
        )
        if let file = request.responseBodyFile {
            monitored.responseBodyFile = ResponseBodyFile(url: file.url) { [state = report.state] written, expected in
                state.withLock { $0.receivedBody = max($0.receivedBody, written) }
                file.progress(written, expected)
            }
        }
        return (report, monitored)
    }

    /// An event of the attempt's exchange, before it is passed on: its end ends the attempt.
    func receive(_ event: Event<HTTPResponsePart, any Error>) {
        switch event {
        case .value(.head(let head)):
            let now = sink.scheduler.now
            state.withLock {
                $0.head = head
                $0.headAt = now
            }
        case .value(.body(let chunk)):
            state.withLock { $0.receivedBody += Int64(chunk.count) }
        case .finished:
            end(.completed)
        case .failed(let error):
            end(.failed(error))
        }
    }

    /// Ends the attempt with `outcome`, unless it already ended.
    func end(_ outcome: HTTPAttemptMetrics.Outcome) {
        let now = sink.scheduler.now
        guard let ended = state.withLock({ state -> State? in
            guard !state.ended else { return nil }
            state.ended = true
            return state
        }) else { return }
        let metrics = HTTPAttemptMetrics(
            id: id, head: ended.head,
            sentHeadBytes: sentHead, sentBodyBytes: sentBody,
            receivedHeadBytes: ended.head.map(HTTPWireSize.responseHead) ?? 0,
            receivedBodyBytes: ended.receivedBody,
            startedAt: startedAt, headAt: ended.headAt, endedAt: now, outcome: outcome
        )
        sink.endAttempt(metrics, request: sent, resendCount: resendCount)
    }

    /// The scope the attempt runs in was cancelled before its exchange ended.
    func cancel() {
        end(.cancelled)
    }
}

/// Sizes of requests and responses as HTTP/1.1 serialises them (see ``HTTPAttemptMetrics``).
enum HTTPWireSize {
    /// `\r\n`.
    private static let lineEnd = 2
    /// `: ` between a header's name and value.
    private static let separator = 2

    /// The request line, `Host`, the header lines, `Content-Length` for a body of `bodyBytes`,
    /// the blank line.
    static func requestHead(_ request: TransportRequest, bodyBytes: Int64) -> Int {
        let method = request.method.rawValue
        let (targetBytes, hostBytes) = targetAndHostSizes(request.url)
        // "GET /path HTTP/1.1\r\n"
        var size = method.utf8.count + 1 + targetBytes + 1 + "HTTP/1.1".utf8.count + lineEnd
        var hasHost = false
        var hasLength = false
        for field in request.headerFields {
            size += field.name.utf8.count + separator + field.value.utf8.count + lineEnd
            let lowered = field.name.lowercased()
            if lowered == "host" { hasHost = true }
            if lowered == "content-length" { hasLength = true }
        }
        if !hasHost { size += "Host".utf8.count + separator + hostBytes + lineEnd }
        if bodyBytes > 0, !hasLength {
            size += "Content-Length".utf8.count + separator + String(bodyBytes).utf8.count + lineEnd
        }
        return size + lineEnd
    }

    /// The body: the body file's size, or `httpBody`'s.
    static func requestBody(_ request: TransportRequest) -> Int64 {
        if let file = request.bodyFile {
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
            return size
        }
        return Int64(request.body?.count ?? 0)
    }

    /// The status line, the header lines and the blank line of `head`.
    static func responseHead(_ head: HTTPResponseHead) -> Int {
        let status = head.statusCode
        let reason = reasonPhrase(status)
        // "HTTP/1.1 200 OK\r\n"
        var size = "HTTP/1.1".utf8.count + 1 + String(status).utf8.count + 1 + reason.utf8.count + lineEnd
        for field in head.fields {
            size += field.name.utf8.count + separator + field.value.utf8.count + lineEnd
        }
        return size + lineEnd
    }

    /// The sizes in bytes of the request target (the percent-encoded path, `/` when empty, and
    /// the query) and of the `Host` value (the host, with its port unless it is the scheme's
    /// default) of `url`, read from its text without parsing it into components.
    static func targetAndHostSizes(_ url: URL?) -> (target: Int, host: Int) {
        guard let url else { return (1, 0) }
        let bytes = Array(url.absoluteString.utf8)
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), hash = UInt8(ascii: "#"), colon = UInt8(ascii: ":")
        guard let schemeEnd = bytes.firstIndex(of: colon), schemeEnd + 2 < bytes.count,
              bytes[schemeEnd + 1] == slash, bytes[schemeEnd + 2] == slash
        else { return (1, 0) }
        // The authority: up to the path, the query or the fragment; the host after any user-info.
        var end = schemeEnd + 3
        while end < bytes.count, bytes[end] != slash, bytes[end] != question, bytes[end] != hash { end += 1 }
        let authority = bytes[(schemeEnd + 3)..<end]
        let hostStart = authority.lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? authority.startIndex
        var hostEnd = end
        // A port follows the last colon that is not inside an IPv6 literal's brackets.
        if let portColon = bytes[hostStart..<end].lastIndex(of: colon),
           portColon > (bytes[hostStart..<end].lastIndex(of: UInt8(ascii: "]")) ?? hostStart - 1) {
            let port = Int(String(decoding: bytes[(portColon + 1)..<end], as: UTF8.self))
            let scheme = String(decoding: bytes[..<schemeEnd], as: UTF8.self)
            if port == nil || port == defaultPort(scheme) { hostEnd = portColon }
        }
        // The target: the path and the query, without the fragment; `/` for an empty path.
        let targetEnd = bytes[end...].firstIndex(of: hash) ?? bytes.count
        let target = targetEnd - end
        let startsWithPath = target > 0 && bytes[end] == slash
        return (startsWithPath ? target : target + 1, hostEnd - hostStart)
    }

    private static func defaultPort(_ scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    /// The standard reason phrase of `status` (RFC 9110), or an empty one for a code without a
    /// name.
    static func reasonPhrase(_ status: Int) -> String {
        HTTPStatus.reasonPhrases[status] ?? ""
    }
}
