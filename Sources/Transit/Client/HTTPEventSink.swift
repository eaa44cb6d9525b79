import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization

/// The monitors of one ``HTTPClient`` and the clock their events are stamped with; and, for a
/// request, what its events carry (its identity, operation name and the monitors' contexts) and
/// how it ends.
///
/// A client has one only when it has monitors: everything that reports events takes an optional
/// sink and builds nothing when it is `nil`, so a client without monitors pays nothing. Each
/// request the client's signal is subscribed for gets a sink of its own
/// (``request(operationName:)``), which every stage of that request reports to.
///
/// How events reach the client from parts of a chain that do not know it: the client puts the
/// request's sink into what it fails and answers with (``HTTPResponse`` — and so every
/// ``HTTPError`` built from it — and ``TransportError``). `retry(_:)`, `respondToRateLimiting` and
/// `retryWithFreshToken(from:scheduler:)` read it from the failure they handle, so their
/// retries, budget refusals and refreshes are reported to the monitors of the client that sent
/// the request, without being told about it. When such an operator subscribes again, it hands
/// the request over (``handOver()``) and subscribes within ``resubscribing(_:)``: the client's
/// new subscription continues the same request (same identity and contexts, even from a timer's
/// thread) and the request ends once, after its last subscription.
///
/// Thread safety: immutable but for atomics and a mutex.
final class HTTPEventSink: Sendable {
    /// What the sinks of one client share.
    private final class Counters: Sendable {
        let attempts = Atomic<UInt64>(0)
        let requests = Atomic<UInt64>(0)
    }

    /// Where a request is in its life.
    private struct Lifecycle {
        /// The request as ``HTTPEvent/Kind/requestStarted`` reported it, once it did.
        var started: TransportRequest.Form?
        var ended = false
        /// The number of the client's latest subscription for the request.
        var generation: UInt64 = 0
        /// An operator will subscribe again: the end of the current subscription is not the
        /// request's.
        var handedOver = false
        /// The final response's status, once known.
        var statusCode: Int?
    }

    let monitors: [any HTTPEventMonitor]
    let scheduler: any Scheduler
    private let counters: Counters
    /// The request's identity; `nil` for the client's own sink.
    let requestID: UInt64?
    let operationName: String?
    /// The monitors' contexts, in the order of ``monitors``; empty when none captured any.
    private let contexts: [(any Sendable)?]
    /// The attempts of the request started so far.
    private let resends = Atomic<Int>(0)
    private let lifecycle = Mutex(Lifecycle())

    /// The sink of a client.
    init(monitors: [any HTTPEventMonitor], scheduler: any Scheduler) {
        self.monitors = monitors
        self.scheduler = scheduler
        counters = Counters()
        requestID = nil
        operationName = nil
        contexts = []
    }

    private init(of client: HTTPEventSink, requestID: UInt64, operationName: String?, contexts: [(any Sendable)?]) {
        monitors = client.monitors
        scheduler = client.scheduler
        counters = client.counters
        self.requestID = requestID
        self.operationName = operationName
        self.contexts = contexts
    }

    /// The sink of a new request of this client, with a new identity, the monitors' contexts
    /// captured here (on the subscribing thread).
    func request(operationName: String?) -> HTTPEventSink {
        var contexts: [(any Sendable)?] = []
        for (index, monitor) in monitors.enumerated() {
            guard let context = monitor.captureRequestContext() else { continue }
            if contexts.isEmpty { contexts = Array(repeating: nil, count: monitors.count) }
            contexts[index] = context
        }
        return HTTPEventSink(of: self, requestID: nextRequestID(), operationName: operationName, contexts: contexts)
    }

    private func nextRequestID() -> UInt64 {
        counters.requests.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Whether `other` reports to the same client.
    func isSameClient(as other: HTTPEventSink) -> Bool {
        counters === other.counters
    }

    /// Delivers an event of `kind` about `request` to every monitor, stamped with the scheduler's
    /// time.
    func emit(_ kind: HTTPEvent.Kind, request: TransportRequest? = nil) {
        emit(kind, form: request?.form, resendCount: nil)
    }

    /// ``emit(_:request:)`` about a request held as a `URLRequest` (wrapped, not converted).
    func emit(_ kind: HTTPEvent.Kind, request: URLRequest?) {
        emit(kind, form: request.map { .foundation($0) }, resendCount: nil)
    }

    /// Delivers the event about the request made of `form` (one reference, however the request
    /// was given: a request's other fields are not the events' business).
    func emit(_ kind: HTTPEvent.Kind, form: TransportRequest.Form?, resendCount: Int? = nil) {
        let event = HTTPEvent(
            kind: kind, form: form, time: scheduler.now,
            requestID: requestID, resendCount: resendCount, operationName: operationName
        )
        guard !contexts.isEmpty else {
            for monitor in monitors { monitor.receive(event) }
            return
        }
        for (monitor, context) in zip(monitors, contexts) { monitor.receive(event.with(context: context)) }
    }

    /// A new attempt number, unique within the client.
    func nextAttemptID() -> UInt64 {
        counters.attempts.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Reports attempt `id` of the request, about to send `request`: returns its resend count
    /// and the header fields the monitors add to it.
    func startAttempt(_ id: UInt64, request: TransportRequest.Form) -> (resendCount: Int, fields: [HTTPField]) {
        let resendCount = resends.wrappingAdd(1, ordering: .relaxed).oldValue
        let event = HTTPEvent(
            kind: .attemptStarted(id: id), form: request, time: scheduler.now,
            requestID: requestID, resendCount: resendCount, operationName: operationName
        )
        var fields: [HTTPField] = []
        for (index, monitor) in monitors.enumerated() {
            let delivered = contexts.isEmpty ? event : event.with(context: contexts[index])
            monitor.receive(delivered)
            fields += monitor.headerFields(forAttempt: delivered)
        }
        return (resendCount, fields)
    }

    /// Reports the end of an attempt.
    func endAttempt(_ metrics: HTTPAttemptMetrics, request: TransportRequest.Form, resendCount: Int) {
        if case .completed = metrics.outcome, let head = metrics.head { noteStatus(head.statusCode) }
        emit(.attemptEnded(metrics), form: request, resendCount: resendCount)
    }

    // MARK: The request's start and end

    /// Reports ``HTTPEvent/Kind/requestStarted`` for a subscription of the request.
    func startRequest(_ form: TransportRequest.Form) {
        lifecycle.withLock { if $0.started == nil { $0.started = form } }
        emit(.requestStarted, form: form, resendCount: nil)
    }

    /// Notes the status of the final response.
    func noteStatus(_ statusCode: Int) {
        lifecycle.withLock { $0.statusCode = statusCode }
    }

    /// A subscription of the client for this request begins; returns its number.
    func beginSubscription() -> UInt64 {
        lifecycle.withLock { state in
            state.generation += 1
            return state.generation
        }
    }

    /// Subscription `generation` ended with `outcome`: the request ends, unless a later
    /// subscription took over or an operator will subscribe again.
    func endSubscription(_ generation: UInt64, _ outcome: HTTPEvent.RequestOutcome) {
        end(outcome) { $0.generation == generation && !$0.handedOver }
    }

    /// An operator will subscribe to the request again (a retry): the end of the current
    /// subscription is not the request's.
    func handOver() {
        guard requestID != nil else { return }
        lifecycle.withLock { $0.handedOver = true }
    }

    /// The sink a subscription made within ``resubscribing(_:)`` continues: this one, or, when
    /// it already ended, a new request with the same contexts; `nil` when no operator handed it
    /// over (or another subscription took it).
    private func claim() -> HTTPEventSink? {
        let ended = lifecycle.withLock { state -> Bool? in
            guard state.handedOver else { return nil }
            state.handedOver = false
            return state.ended
        }
        guard let ended else { return nil }
        guard ended else { return self }
        return HTTPEventSink(of: self, requestID: nextRequestID(), operationName: operationName, contexts: contexts)
    }

    /// Ends the request with `outcome` if it was handed over and no subscription took it (the
    /// operator's wait was cancelled, or it failed without subscribing again).
    func endIfUnclaimed(_ outcome: HTTPEvent.RequestOutcome) {
        end(outcome) { state in
            defer { state.handedOver = false }
            return state.handedOver
        }
    }

    /// Reports ``HTTPEvent/Kind/requestEnded(_:)`` once, if the request started and `ends` says
    /// so.
    private func end(_ outcome: HTTPEvent.RequestOutcome, if ends: (inout Lifecycle) -> Bool) {
        let ended = lifecycle.withLock { state -> (TransportRequest.Form, Int?)? in
            guard !state.ended, let started = state.started, ends(&state) else { return nil }
            state.ended = true
            return (started, state.statusCode)
        }
        guard let (request, statusCode) = ended else { return }
        let closing: HTTPEvent.RequestOutcome = if case .completed = outcome { .completed(statusCode: statusCode) } else { outcome }
        emit(.requestEnded(closing), form: request, resendCount: nil)
    }

    /// The request an operator subscribes again, within ``resubscribing(_:)``.
    @TaskLocal private static var handedOverRequest: HTTPEventSink?

    /// Runs `subscribe` (an operator subscribing to its upstream again) so that a subscription of
    /// the client it makes continues this request.
    func resubscribing(_ subscribe: () -> Void) {
        Self.$handedOverRequest.withValue(self, operation: subscribe)
    }

    /// `upstream`, each subscription of which is made within ``resubscribing(_:)``.
    func continuing<Output, Failure>(_ upstream: Signal<Output, Failure>) -> Signal<Output, Failure> {
        Signal { observer in
            let scope = CancellationToken()
            self.resubscribing { upstream.observe(observer, in: scope) }
            return { scope.cancel() }
        }
    }

    /// The sink of a request of this client, the client's sink, subscribed now: the request an
    /// operator handed over (see ``resubscribing(_:)``), or a new one.
    func subscribedRequest(operationName: String?) -> HTTPEventSink {
        if let handedOver = Self.handedOverRequest, handedOver.isSameClient(as: self), let continued = handedOver.claim() {
            return continued
        }
        return request(operationName: operationName)
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
    static func request(of error: any Error) -> TransportRequest? {
        if let httpError = error as? any HTTPError { return httpError.response?.sent }
        return (error as? TransportError)?.transportRequest
    }

    /// Reports `kind` about `failure` to the monitors of the client `failure` came from, if any.
    static func report(_ kind: @autoclosure () -> HTTPEvent.Kind, about failure: any Error) {
        guard let sink = of(failure) else { return }
        sink.emit(kind(), request: request(of: failure))
    }
}

extension HTTPEvent {
    /// This event as delivered to a monitor whose context is `context`.
    func with(context: (any Sendable)?) -> HTTPEvent {
        HTTPEvent(
            kind: kind, form: sentForm, time: time,
            requestID: requestID, resendCount: resendCount, operationName: operationName, context: context
        )
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
            var monitored = request
            let id = sink.nextAttemptID()
            let startedAt = sink.scheduler.now
            let (resendCount, fields) = sink.startAttempt(id, request: request.form)
            // The monitors' fields (trace context) replace any of the same name.
            for field in fields where URLRequest.checkHeader(field.name, field.value) == nil {
                monitored.setValue(field.value, forHTTPHeaderField: field.name)
            }
            let sent = (fields.isEmpty ? request : monitored).form
            let sentBody = HTTPWireSize.requestBody(request)
            let sentHead = HTTPWireSize.requestHead(monitored, bodyBytes: sentBody)
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
                sink.endAttempt(metrics, request: sent, resendCount: resendCount)
            }
            redirectMark?.register { end(.redirected) }
            let scope = CancellationToken()
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
