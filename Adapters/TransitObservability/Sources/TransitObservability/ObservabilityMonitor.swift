import CoreMetrics
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Signals
import Tracing
import Transit

/// Logs, metrics and traces for every request of an ``HTTPClient``: one ``HTTPEventMonitor``.
///
/// ```swift
/// let client = HTTPClient(transport: AsyncHTTPClientTransport.shared) {
///     $0.monitors = [ObservabilityMonitor()]
/// }
/// ```
///
/// By default it uses what the application bootstrapped: `LoggingSystem`, `MetricsSystem` and
/// `InstrumentationSystem.tracer`; pass others to the initialiser (a test passes its own, with no
/// global bootstrap).
///
/// **Metrics**, under OpenTelemetry's names for HTTP clients, with the dimensions
/// `http.request.method`, `server.address`, `server.port`, `url.scheme` and, when the request has
/// one, `operation` (its ``RequestOptions/operationName``) — never a path or a query:
/// - `http.client.request.duration` (a timer, per attempt: each redirect hop, retry, failover and
///   credential resend), with `http.response.status_code` when a head arrived and `error.type`
///   when it failed or answered 400 or more;
/// - `http.client.request.body.size` and `http.client.response.body.size` (recorders, bytes, per
///   attempt);
/// - `http.client.active_requests` (a meter: requests started and not yet ended);
/// - `transit.client.*` counters for what only Transit knows: `rate_limit.waits`,
///   `cooldowns.started`, `cooldowns.waits`, `cooldowns.refused`, `retries` (with the failure's
///   `error.type`), `retries.refused_by_budget`, `redirects` (with the status), `failovers`,
///   `quarantines`, `credential_renewals` (with `outcome`: `started`, `joined`,
///   `already_renewed`, `succeeded`, `declined`, `failed`, `refused`),
///   `coalesced_joins`; and `transit.client.wait.duration`, a timer of the time each request
///   waited in all (rate limit, cooldowns, retry delays), recorded when it ends.
///
/// **Traces.** A span per request (named after its operation, else its method; its parent is the
/// `ServiceContext` current where the request was subscribed, captured by
/// ``captureRequestContext()``, so a retry a timer sends later stays in the caller's trace), and
/// under it a client span per attempt, named after the method, with OpenTelemetry's attributes
/// (`http.request.method`, `server.address`, `server.port`, `url.full` redacted, `url.scheme`,
/// `http.request.resend_count`, `http.response.status_code`, `error.type`), its status an error
/// when the attempt failed or answered 400 or more. The attempt span's context is injected into
/// the attempt's headers by the tracer (`traceparent` with a W3C tracer) on every attempt
/// (``headerFields(forAttempt:)``). Waits, retries, redirects, failovers and token refreshes are
/// events of the request span, with their durations. Span times are the client's scheduler's
/// (virtual under a `TestScheduler`), placed on the wall clock.
///
/// **Logs**: one constant message per event, its data as metadata (`transit.request.id`,
/// `http.request.method`, `url.full` redacted, `http.response.status_code`, `error.type`, …). At
/// `info` and above only what a service cannot see otherwise: failed requests (`warning`),
/// retries and cooldowns (`info`), quarantines, failovers, budget refusals and failed token
/// refreshes (`warning`). Everything else is `debug` (attempts are `trace`). Never a header
/// value, a body, a token or an unredacted URL: URLs go through Transit's ``Redaction``, errors
/// are described by their status or with their URLs redacted.
///
/// Thread safety: events may arrive on any thread; the monitor's state is behind one lock, and
/// spans are changed outside it.
public final class ObservabilityMonitor: HTTPEventMonitor {
    private let logger: Logger?
    private let metrics: (any MetricsFactory)?
    private let tracer: (any Tracer)?
    private let requests = Locked<[UInt64: RequestRecord]>([:])
    private let clock = EventClock()

    /// Creates a monitor that logs to `logger`, records metrics with `metrics` and traces with
    /// `tracer`; `nil` turns that part off. The defaults are what the application bootstrapped
    /// (a `NoOpTracer` counts as no tracer).
    public init(
        logger: Logger? = Logger(label: "transit.client"),
        metrics: (any MetricsFactory)? = MetricsSystem.factory,
        tracer: (any Tracer)? = InstrumentationSystem.tracer
    ) {
        self.logger = logger
        self.metrics = metrics
        self.tracer = tracer is NoOpTracer ? nil : tracer
    }

    /// The `ServiceContext` current where the request is subscribed: the parent of its span.
    public func captureRequestContext() -> (any Sendable)? {
        guard tracer != nil else { return nil }
        return ServiceContext.current
    }

    /// The attempt span's context, injected by the tracer (`traceparent` with a W3C tracer).
    public func headerFields(forAttempt event: HTTPEvent) -> [HTTPField] {
        guard let tracer, let requestID = event.requestID, case .attemptStarted(let id) = event.kind,
              let span = requests.withLock({ $0[requestID]?.attempts[id]?.span })
        else { return [] }
        var fields: [HTTPField] = []
        tracer.inject(span.context, into: &fields, using: HTTPFieldInjector())
        return fields
    }

    /// Records `event` as metrics, spans and log entries.
    public func receive(_ event: HTTPEvent) {
        switch event.kind {
        case .requestStarted:
            requestStarted(event)
        case .attemptStarted(let id):
            attemptStarted(id, event)
        case .attemptEnded(let metrics):
            attemptEnded(metrics, event)
        case .requestEnded(let outcome):
            requestEnded(outcome, event)
        default:
            happened(event)
        }
    }

    // MARK: The request

    private func requestStarted(_ event: HTTPEvent) {
        guard let id = event.requestID else { return }
        // A request sent again (a retry, a credential resend) starts once.
        let known = requests.withLock { $0[id] != nil }
        guard !known else { return }
        let attributes = RequestAttributes(event.transportRequest, operation: event.operationName)
        var span: (any Span)?
        if let tracer {
            let parent = event.context as? ServiceContext ?? .topLevel
            let name = attributes.operation.isEmpty ? attributes.method : attributes.operation
            let started = tracer.startSpan(name, context: parent, ofKind: .internal, at: clock.instant(of: event.time))
            // One update: a span's attributes may be behind a lock, taken once rather than per key.
            started.updateAttributes { span in
                span["http.request.method"] = attributes.method
                span["server.address"] = attributes.address
                span["server.port"] = attributes.port
                span["url.full"] = attributes.redactedURL
                if !attributes.operation.isEmpty { span["transit.operation"] = attributes.operation }
            }
            span = started
        }
        requests.withLock { $0[id] = RequestRecord(attributes: attributes, span: span) }
        metrics?.makeMeter(label: "http.client.active_requests", dimensions: attributes.dimensions()).increment(by: 1)
        log(.debug, "request started", event, attributes)
    }

    private func requestEnded(_ outcome: HTTPEvent.RequestOutcome, _ event: HTTPEvent) {
        guard let id = event.requestID, let record = requests.withLock({ $0.removeValue(forKey: id) }) else { return }
        let attributes = record.attributes
        var statusCode: Int?
        var failure: (any Error)?
        switch outcome {
        case .completed(let status): statusCode = status
        case .failed(let error): failure = error
        case .cancelled: break
        }
        if let span = record.span {
            if let statusCode {
                span.attributes["http.response.status_code"] = statusCode
                if statusCode >= 400 { span.setStatus(SpanStatus(code: .error)) }
            }
            if let failure {
                span.attributes["error.type"] = errorType(failure)
                span.setStatus(SpanStatus(code: .error, message: describe(failure)))
            }
            if case .cancelled = outcome { span.attributes["transit.cancelled"] = true }
            span.end(at: clock.instant(of: event.time))
        }
        if let metrics {
            metrics.makeMeter(label: "http.client.active_requests", dimensions: attributes.dimensions()).decrement(by: 1)
            metrics.makeTimer(label: "transit.client.wait.duration", dimensions: attributes.dimensions())
                .recordNanoseconds(nanoseconds(record.waited))
        }
        switch outcome {
        case .completed:
            log(.debug, "request completed", event, attributes, statusCode.map { ["http.response.status_code": "\($0)"] } ?? [:])
        case .failed(let error):
            log(.warning, "request failed", event, attributes, ["error.type": "\(errorType(error))", "error": "\(describe(error))"])
        case .cancelled:
            log(.debug, "request cancelled", event, attributes)
        }
    }

    // MARK: Attempts

    private func attemptStarted(_ id: UInt64, _ event: HTTPEvent) {
        guard let requestID = event.requestID else { return }
        let record = requests.withLock { $0[requestID] }
        guard let record else { return }
        // The request's own attributes unless this attempt goes elsewhere (a redirect hop to
        // another URL, a failover origin): reading a URL's parts is most of their cost.
        let attributes = event.transportRequest?.url == record.attributes.url
            ? record.attributes
            : RequestAttributes(event.transportRequest, operation: event.operationName)
        var span: (any Span)?
        if let tracer, let parent = record.span {
            let started = tracer.startSpan(attributes.method, context: parent.context, ofKind: .client, at: clock.instant(of: event.time))
            started.updateAttributes { span in
                span["http.request.method"] = attributes.method
                span["server.address"] = attributes.address
                span["server.port"] = attributes.port
                span["url.full"] = attributes.redactedURL
                span["url.scheme"] = attributes.scheme
                if let resendCount = event.resendCount, resendCount > 0 { span["http.request.resend_count"] = resendCount }
            }
            span = started
        }
        requests.withLock { $0[requestID]?.attempts[id] = AttemptRecord(attributes: attributes, span: span) }
        log(.trace, "attempt started", event, attributes, ["http.request.resend_count": "\(event.resendCount ?? 0)"])
    }

    private func attemptEnded(_ attempt: HTTPAttemptMetrics, _ event: HTTPEvent) {
        let record = event.requestID.flatMap { requestID in requests.withLock { $0[requestID]?.attempts.removeValue(forKey: attempt.id) } }
        let span = record?.span
        // The attempt's own URL (a redirect hop, a failover origin), with the request's operation.
        let attributes = record?.attributes ?? RequestAttributes(event.transportRequest, operation: event.operationName)
        let statusCode = attempt.head?.statusCode
        var error: String?
        switch attempt.outcome {
        case .failed(let failure): error = errorType(failure)
        case .cancelled: error = statusCode == nil ? "cancelled" : nil
        case .completed, .redirected: error = statusCode.flatMap { $0 >= 400 ? String($0) : nil }
        }
        if let span {
            span.updateAttributes { span in
                if let statusCode { span["http.response.status_code"] = statusCode }
                if let error { span["error.type"] = error }
                span["http.request.body.size"] = Int(attempt.sentBodyBytes)
                span["http.response.body.size"] = Int(attempt.receivedBodyBytes)
            }
            if error != nil { span.setStatus(SpanStatus(code: .error)) }
            span.end(at: clock.instant(of: attempt.endedAt))
        }
        if let metrics {
            var extra: [(String, String)] = []
            if let statusCode { extra.append(("http.response.status_code", String(statusCode))) }
            if let error { extra.append(("error.type", error)) }
            let dimensions = attributes.dimensions() + extra
            metrics.makeTimer(label: "http.client.request.duration", dimensions: dimensions)
                .recordNanoseconds(nanoseconds(attempt.endedAt - attempt.startedAt))
            metrics.makeRecorder(label: "http.client.request.body.size", dimensions: dimensions, aggregate: true)
                .record(attempt.sentBodyBytes)
            metrics.makeRecorder(label: "http.client.response.body.size", dimensions: dimensions, aggregate: true)
                .record(attempt.receivedBodyBytes)
        }
        if logger.map({ $0.logLevel <= .debug }) == true {
            var metadata: Logger.Metadata = [
                "http.request.resend_count": "\(event.resendCount ?? 0)",
                "duration": "\(seconds(attempt.endedAt - attempt.startedAt))",
                "http.request.body.size": "\(attempt.sentBodyBytes)",
                "http.response.body.size": "\(attempt.receivedBodyBytes)",
            ]
            if let statusCode { metadata["http.response.status_code"] = "\(statusCode)" }
            if let error { metadata["error.type"] = "\(error)" }
            log(.debug, "attempt ended", event, attributes, metadata)
        }
    }

    // MARK: Everything else

    /// What happens to a request between its attempts: a counter, an event of its span, a log
    /// entry.
    private func happened(_ event: HTTPEvent) {
        let record = event.requestID.flatMap { id in requests.withLock { $0[id] } }
        let attributes = record?.attributes ?? RequestAttributes(event.transportRequest, operation: event.operationName)
        switch event.kind {
        case .redirectFollowed(let status, let next, _):
            count("transit.client.redirects", attributes, ("http.response.status_code", String(status)))
            addEvent("transit.redirect", to: record, event, ["http.response.status_code": status, "url.full": next.url?.redactedForLogging ?? ""])
            log(.debug, "redirect followed", event, attributes, ["http.response.status_code": "\(status)"])
        case .rateLimitWaited(_, let waited):
            wait(waited, event)
            count("transit.client.rate_limit.waits", attributes)
            addEvent("transit.rate_limit.wait", to: record, event, ["transit.wait.duration": seconds(waited)])
            log(.debug, "rate limit waited", event, attributes, ["duration": "\(seconds(waited))"])
        case .cooldownStarted(_, let duration, let statusCode):
            count("transit.client.cooldowns.started", attributes, ("http.response.status_code", String(statusCode)))
            addEvent("transit.cooldown.started", to: record, event, ["transit.cooldown.duration": seconds(duration), "http.response.status_code": statusCode])
            log(.info, "cooldown started", event, attributes, ["duration": "\(seconds(duration))", "http.response.status_code": "\(statusCode)"])
        case .cooldownWait(_, let duration):
            wait(duration, event)
            count("transit.client.cooldowns.waits", attributes)
            addEvent("transit.cooldown.wait", to: record, event, ["transit.wait.duration": seconds(duration)])
            log(.info, "waiting for cooldown", event, attributes, ["duration": "\(seconds(duration))"])
        case .cooldownRefused(_, let remaining):
            count("transit.client.cooldowns.refused", attributes)
            addEvent("transit.cooldown.refused", to: record, event, ["transit.cooldown.remaining": seconds(remaining)])
            log(.info, "cooldown longer than the client waits", event, attributes, ["remaining": "\(seconds(remaining))"])
        case .retryScheduled(let attempt, let delay, let failure):
            wait(delay, event)
            count("transit.client.retries", attributes, ("error.type", errorType(failure)))
            addEvent("transit.retry", to: record, event, [
                "transit.wait.duration": seconds(delay), "transit.retry.attempt": attempt, "error.type": errorType(failure),
            ])
            log(.info, "retry scheduled", event, attributes, [
                "delay": "\(seconds(delay))", "attempt": "\(attempt)", "error.type": "\(errorType(failure))", "error": "\(describe(failure))",
            ])
        case .retryRefusedByBudget(let attempt, let failure):
            count("transit.client.retries.refused_by_budget", attributes)
            addEvent("transit.retry.refused_by_budget", to: record, event, ["transit.retry.attempt": attempt, "error.type": errorType(failure)])
            log(.warning, "retry refused by the retry budget", event, attributes, ["attempt": "\(attempt)", "error.type": "\(errorType(failure))"])
        case .hostQuarantined(let origin, let duration, let error):
            count("transit.client.quarantines", attributes, ("transit.origin", origin))
            addEvent("transit.host.quarantined", to: record, event, ["transit.origin": origin, "transit.quarantine.duration": seconds(duration)])
            log(.warning, "host quarantined", event, attributes, [
                "transit.origin": "\(origin)", "duration": "\(seconds(duration))", "error.type": "URLError.\(error.code.rawValue)",
            ])
        case .failover(let from, let to, let error):
            count("transit.client.failovers", attributes)
            addEvent("transit.failover", to: record, event, ["transit.failover.from": from, "transit.failover.to": to])
            log(.warning, "failover", event, attributes, ["from": "\(from)", "to": "\(to)", "error.type": "URLError.\(error.code.rawValue)"])
        case .hostRecovered(let origin):
            log(.debug, "host recovered", event, attributes, ["transit.origin": "\(origin)"])
        case .credentialRenewalStarted:
            if let id = event.requestID { requests.withLock { $0[id]?.refreshStartedAt = event.time } }
            renewal("started", event, record, attributes, level: .debug)
        case .credentialRenewalJoined:
            if let id = event.requestID { requests.withLock { $0[id]?.refreshStartedAt = event.time } }
            renewal("joined", event, record, attributes, level: .debug)
        case .credentialsAlreadyRenewed:
            renewal("already_renewed", event, record, attributes, level: .debug)
        case .credentialRenewalSucceeded:
            renewal("succeeded", event, record, attributes, level: .debug)
        case .credentialRenewalDeclined:
            renewal("declined", event, record, attributes, level: .debug)
        case .credentialRenewalFailed(let error, _):
            renewal("failed", event, record, attributes, level: .warning, ["error.type": "\(errorType(error))", "error": "\(describe(error))"])
        case .credentialRenewalRefused(let reason, _):
            renewal("refused", event, record, attributes, level: .warning, ["reason": "\(describe(reason))"])
        case .coalescedRequestJoined(let subscribers):
            count("transit.client.coalesced_joins", attributes)
            addEvent("transit.coalesced", to: record, event, ["transit.coalesced.subscribers": subscribers])
            log(.debug, "joined an identical request in flight", event, attributes, ["subscribers": "\(subscribers)"])
        case .responseReceived(let response):
            log(.trace, "response received", event, attributes, ["http.response.status_code": "\(response.statusCode)"])
        case .requestFailed(let error):
            log(.debug, "attempt of the request failed", event, attributes, ["error.type": "\(errorType(error))"])
        default:
            log(.debug, "event", event, attributes)
        }
    }

    private func renewal(
        _ outcome: String, _ event: HTTPEvent, _ record: RequestRecord?, _ attributes: RequestAttributes,
        level: Logger.Level, _ metadata: Logger.Metadata = [:]
    ) {
        count("transit.client.credential_renewals", attributes, ("outcome", outcome))
        var spanAttributes: [String: any SpanAttributeConvertible] = ["transit.renewal.outcome": outcome]
        if outcome != "started", outcome != "joined", let started = record?.refreshStartedAt {
            spanAttributes["transit.renewal.duration"] = seconds(event.time - started)
        }
        addEvent("transit.credential_renewal.\(outcome)", to: record, event, spanAttributes)
        let failed = outcome == "failed" || outcome == "refused"
        log(level, failed ? "credential renewal failed" : "credential renewal", event, attributes, metadata.merging(["outcome": "\(outcome)"]) { $1 })
    }

    /// Adds `duration` to the time the request waited in all.
    private func wait(_ duration: Duration, _ event: HTTPEvent) {
        guard let id = event.requestID else { return }
        requests.withLock { $0[id]?.waited += duration }
    }

    private func count(_ label: String, _ attributes: RequestAttributes, _ extra: (String, String)...) {
        guard let metrics else { return }
        var dimensions = attributes.dimensions()
        dimensions += extra
        metrics.makeCounter(label: label, dimensions: dimensions).increment(by: 1)
    }

    private func addEvent(_ name: String, to record: RequestRecord?, _ event: HTTPEvent, _ values: [String: any SpanAttributeConvertible]) {
        guard let span = record?.span else { return }
        var attributes = SpanAttributes()
        for (key, value) in values { attributes[key] = value }
        span.addEvent(SpanEvent(name: name, at: clock.instant(of: event.time), attributes: attributes))
    }

    /// Logs `message` at `level` with the request's attributes and `metadata`, which is built only
    /// when the logger logs at that level.
    private func log(
        _ level: Logger.Level, _ message: Logger.Message, _ event: HTTPEvent, _ attributes: RequestAttributes,
        _ metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard let logger, logger.logLevel <= level else { return }
        var all: Logger.Metadata = [
            "http.request.method": "\(attributes.method)",
            "server.address": "\(attributes.address)",
            "url.full": "\(attributes.redactedURL)",
        ]
        if let id = event.requestID { all["transit.request.id"] = "\(id)" }
        if !attributes.operation.isEmpty { all["operation"] = "\(attributes.operation)" }
        all.merge(metadata()) { $1 }
        logger.log(level: level, message, metadata: all)
    }
}

/// What the monitor keeps about a request in flight.
struct RequestRecord: Sendable {
    let attributes: RequestAttributes
    /// The request's span, when tracing.
    let span: (any Span)?
    /// Its attempts in flight, by attempt id.
    var attempts: [UInt64: AttemptRecord] = [:]
    /// The time it waited so far: rate limit, cooldowns, retry delays.
    var waited: Duration = .zero
    /// When the token refresh (or renewal) it waits for started, on the client's clock.
    var refreshStartedAt: Duration?

    init(attributes: RequestAttributes, span: (any Span)?) {
        self.attributes = attributes
        self.span = span
    }
}

/// What the monitor keeps about an attempt in flight.
struct AttemptRecord: Sendable {
    /// The attempt's attributes (its own URL: a redirect hop's, a failover origin's).
    let attributes: RequestAttributes
    /// The attempt's span, when tracing.
    let span: (any Span)?
}

/// Writes the fields a tracer injects as header fields.
struct HTTPFieldInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [HTTPField]) {
        carrier.append(HTTPField(name: key, value: value))
    }
}

/// `duration` in whole nanoseconds.
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

/// `duration` in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(nanoseconds(duration)) / 1e9
}
