import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization

/// The monitors of one ``HTTPClient`` and the clock their events are stamped with.
///
/// A client has one only when it has monitors: everything that reports events takes an optional
/// sink and builds nothing when it is `nil`, so a client without monitors pays nothing.
///
/// How events reach the client from parts of a chain that do not know it: the client puts its
/// sink into what it fails and answers with (``HTTPResponse`` — and so every ``HTTPError`` built
/// from it — and ``TransportError``). `retry(_:)`, `respondToRateLimiting` and
/// `retryWithFreshToken(from:scheduler:)` read it from the failure they handle, so their
/// retries, budget refusals and refreshes are reported to the monitors of the client that sent
/// the request, without being told about it.
///
/// Thread safety: immutable but for an atomic counter.
final class HTTPEventSink: Sendable {
    let monitors: [any HTTPEventMonitor]
    let scheduler: any Scheduler
    private let attempts = Atomic<UInt64>(0)

    init(monitors: [any HTTPEventMonitor], scheduler: any Scheduler) {
        self.monitors = monitors
        self.scheduler = scheduler
    }

    /// Delivers an event of `kind` about `request` to every monitor, stamped with the scheduler's
    /// time.
    func emit(_ kind: HTTPEvent.Kind, request: URLRequest? = nil) {
        let event = HTTPEvent(kind: kind, request: request, time: scheduler.now)
        for monitor in monitors { monitor.receive(event) }
    }

    /// A new attempt number, unique within the client.
    func nextAttemptID() -> UInt64 {
        attempts.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// The sink of the client that produced `error`, if it carries one: an ``HTTPError`` whose
    /// response came from a client, or a client's ``TransportError``.
    static func of(_ error: any Error) -> HTTPEventSink? {
        if let httpError = error as? any HTTPError { return httpError.response?.eventSink }
        if let transportError = error as? TransportError { return transportError.eventSink }
        return nil
    }

    /// The request `error` is about: an ``HTTPError``'s response's request, or a
    /// ``TransportError``'s.
    static func request(of error: any Error) -> URLRequest? {
        if let httpError = error as? any HTTPError { return httpError.response?.request }
        return (error as? TransportError)?.request
    }

    /// Reports `kind` about `failure` to the monitors of the client `failure` came from, if any.
    static func report(_ kind: @autoclosure () -> HTTPEvent.Kind, about failure: any Error) {
        guard let sink = of(failure) else { return }
        sink.emit(kind(), request: request(of: failure))
    }
}

/// Watches one exchange with the transport and reports it as
/// ``HTTPEvent/Kind/attemptStarted(id:)`` and one ``HTTPEvent/Kind/attemptEnded(_:)``.
enum AttemptMonitoring {
    /// Fired by the redirect-following hop when it follows the redirect of the exchange in
    /// flight, just before it cancels it: that exchange ends at once as
    /// ``HTTPAttemptMetrics/Outcome/redirected`` (rather than cancelled, and before the next
    /// hop starts, even when the cancellation's teardown is deferred by a delivery in progress).
    final class RedirectMark: Sendable {
        private let end = Locked<(@Sendable () -> Void)?>(nil)

        /// The exchange in flight registers how to end it; with failover, each attempt in turn.
        func register(_ end: @escaping @Sendable () -> Void) {
            // The previous attempt's closure is released after the lock.
            let previous = self.end.withLock { current in
                defer { current = end }
                return current
            }
            withExtendedLifetime(previous) {}
        }

        /// Ends the registered exchange as redirected.
        func fire() {
            end.withLock { $0 }?()
        }
    }

    private struct State {
        var head: HTTPResponseHead?
        var headAt: Duration?
        var receivedBody: Int64 = 0
        var ended = false
    }

    /// The exchange of `request` that `exchange` makes, reported to `sink`. A body the transport
    /// writes to a file (``TransportRequest/responseBodyFile``) is counted from its progress.
    static func signal(
        request: TransportRequest,
        sink: HTTPEventSink,
        redirectMark: RedirectMark?,
        exchange: @escaping @Sendable (TransportRequest) -> Signal<HTTPResponsePart, any Error>
    ) -> Signal<HTTPResponsePart, any Error> {
        Signal { observer in
            let sent = request.urlRequest
            let id = sink.nextAttemptID()
            let startedAt = sink.scheduler.now
            let sentBody = HTTPWireSize.requestBody(request)
            let sentHead = HTTPWireSize.requestHead(sent, bodyBytes: sentBody)
            let state = Locked(State())
            let end: @Sendable (HTTPAttemptMetrics.Outcome) -> Void = { outcome in
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
                sink.emit(.attemptEnded(metrics), request: sent)
            }
            sink.emit(.attemptStarted(id: id), request: sent)
            redirectMark?.register { end(.redirected) }
            let scope = CancellationToken()
            var monitored = request
            if let file = request.responseBodyFile {
                monitored.responseBodyFile = ResponseBodyFile(url: file.url) { written, expected in
                    state.withLock { $0.receivedBody = max($0.receivedBody, written) }
                    file.progress(written, expected)
                }
            }
            exchange(monitored).observe(Observer { event in
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
                observer.send(event)
            }, in: scope)
            return {
                scope.cancel()
                end(.cancelled)
            }
        }
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
    static func requestHead(_ request: URLRequest, bodyBytes: Int64) -> Int {
        let method = request.httpMethod ?? "GET"
        var target = "/"
        var host = ""
        if let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            let path = components.percentEncodedPath
            target = path.isEmpty ? "/" : path
            if let query = components.percentEncodedQuery { target += "?" + query }
            host = components.percentEncodedHost ?? ""
            if let port = components.port, port != defaultPort(components.scheme) { host += ":\(port)" }
        }
        // "GET /path HTTP/1.1\r\n"
        var size = method.utf8.count + 1 + target.utf8.count + 1 + "HTTP/1.1".utf8.count + lineEnd
        let headers = request.allHTTPHeaderFields ?? [:]
        var hasHost = false
        var hasLength = false
        for (name, value) in headers {
            size += name.utf8.count + separator + value.utf8.count + lineEnd
            let lowered = name.lowercased()
            if lowered == "host" { hasHost = true }
            if lowered == "content-length" { hasLength = true }
        }
        if !hasHost { size += "Host".utf8.count + separator + host.utf8.count + lineEnd }
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
        return Int64(request.urlRequest.httpBody?.count ?? 0)
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
