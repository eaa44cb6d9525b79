import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Observes the whole lifecycle of the requests of an ``HTTPClient``, in one place: for logging,
/// metrics, data-usage accounting or an example's narration.
///
/// Implement ``receive(_:)``: every ``HTTPEvent`` of every request the client sends comes through
/// it — each transport exchange (every redirect hop, retry and failover attempt, with its bytes
/// and timings), redirects, rate-limit and cooldown waits, retries and budget refusals,
/// failovers and recoveries, token refreshes and coalesced requests. Switch on
/// ``HTTPEvent/kind`` with a `default:` case: new kinds may be added.
///
/// ```swift
/// final class Metrics: HTTPEventMonitor {
///     func receive(_ event: HTTPEvent) {
///         switch event.kind {
///         case .attemptEnded(let attempt):
///             record(sent: attempt.sentBodyBytes, received: attempt.receivedBodyBytes,
///                    took: attempt.endedAt - attempt.startedAt)
///         case .retryScheduled, .retryRefusedByBudget:
///             log(event.description)          // redacted: safe to log
///         default:
///             break
///         }
///     }
/// }
/// let client = HTTPClient { $0.monitors = [Metrics()] }
/// ```
///
/// **Threads.** Events are delivered on whatever thread the work happens on — the transport's
/// delegate queue, a scheduler's timer, the subscribing thread — possibly on several threads at
/// once. A monitor must be thread-safe and return quickly; it must not block waiting for the
/// request it observes.
///
/// **Credentials.** Events carry the requests and responses themselves (a monitor is trusted
/// code, like a request modifier): headers such as `Authorization` are in them. Every event's
/// ``HTTPEvent/description`` is redacted with ``Redaction`` (URLs without user-info or secret
/// query values, header *names* only, errors with their URLs redacted), so printing events is
/// safe; anything else you print, pass through ``Redaction`` too.
///
/// **Requests.** Every event of one request carries its ``HTTPEvent/requestID``, and the request
/// ends with exactly one ``HTTPEvent/Kind/requestEnded(_:)``; attempts carry their
/// ``HTTPEvent/resendCount``. Two more requirements, both with defaults that do nothing, let a
/// monitor trace requests:
/// - ``captureRequestContext()`` is called once per request, on the thread (and in the task)
///   that subscribes to it, before its first event. What it returns comes back as
///   ``HTTPEvent/context`` on every event of that request, including the attempts a timer or a
///   transport's thread starts later (a retry after a 503, a wait for a cooldown), where the
///   caller's task-local values are gone. A tracing monitor returns `ServiceContext.current`
///   here (swift-distributed-tracing) and parents its spans on it.
/// - ``headerFields(forAttempt:)`` is asked, for every attempt just after its
///   ``HTTPEvent/Kind/attemptStarted(id:)``, for header fields to add to that attempt before it
///   reaches the transport (every redirect hop, failover attempt, credential resend and retry):
///   where a tracing monitor injects `traceparent`.
///
/// ```swift
/// final class Tracing: HTTPEventMonitor {
///     func captureRequestContext() -> (any Sendable)? { ServiceContext.current }
///     func headerFields(forAttempt event: HTTPEvent) -> [HTTPField] {
///         [HTTPField(name: "traceparent", value: traceparent(for: event))]
///     }
///     func receive(_ event: HTTPEvent) { /* start and end spans by event.requestID */ }
/// }
/// ```
///
/// **Cost.** A client without monitors builds no event at all, allocates no request identity
/// and calls neither requirement.
public protocol HTTPEventMonitor: Sendable {
    /// Receives one event of a request's lifecycle.
    func receive(_ event: HTTPEvent)

    /// Called once per request where it is subscribed, on the subscribing thread and task,
    /// before the request's first event; the value returned is given back as
    /// ``HTTPEvent/context`` on every event of the request (each monitor gets its own). The
    /// default returns `nil`.
    func captureRequestContext() -> (any Sendable)?

    /// Header fields to add to the attempt that `event` (its
    /// ``HTTPEvent/Kind/attemptStarted(id:)``, just delivered to ``receive(_:)``) starts, before it
    /// reaches the transport. A field replaces any field of the same name in the attempt; a field
    /// whose name or value is not valid in HTTP is dropped. The ``HTTPEvent/Kind/attemptEnded(_:)``
    /// of the attempt carries the request with the fields added. Called from whatever thread
    /// starts the attempt; it must return quickly. The default adds none.
    func headerFields(forAttempt event: HTTPEvent) -> [HTTPField]
}

extension HTTPEventMonitor {
    /// Captures nothing.
    public func captureRequestContext() -> (any Sendable)? { nil }

    /// Adds no header field.
    public func headerFields(forAttempt event: HTTPEvent) -> [HTTPField] { [] }
}
