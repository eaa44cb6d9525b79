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
/// How events reach the client's monitors from the chain operators that do not know it: through
/// the ``RequestContext`` the operator's subscription carries down to the client, which attaches
/// the request's sink there. `retry(_:)`, `respondToRateLimiting` and
/// `retryWithFreshToken(from:scheduler:)` report their retries, budget refusals and refreshes to
/// it. When such an operator subscribes again, it hands the request over (``handOver()``) first:
/// the client's new subscription within the same context continues the same request (same
/// identity and contexts, even from a timer's thread) and the request ends once, after its last
/// subscription.
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

    /// The sink a subscription made after ``handOver()`` continues: this one, or, when it
    /// already ended, a new request with the same contexts; `nil` when no operator handed it
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

    /// The sink of a request of this client subscribed now, within `context` (the request
    /// context of a chain operator, if any): the request the operator handed over (see
    /// ``handOver()``), or a new one.
    func subscribedRequest(operationName: String?, in context: RequestContext?) -> HTTPEventSink {
        if let handedOver = context?.request, handedOver.isSameClient(as: self), let continued = handedOver.claim() {
            return continued
        }
        return request(operationName: operationName)
    }

    /// The request `error` is about: an ``HTTPError``'s response's request, or a
    /// ``TransportError``'s.
    static func request(of error: any Error) -> TransportRequest? {
        if let httpError = error as? any HTTPError { return httpError.response?.sent }
        return (error as? TransportError)?.transportRequest
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
