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
/// **Cost.** A client without monitors builds no event at all.
public protocol HTTPEventMonitor: Sendable {
    /// Receives one event of a request's lifecycle.
    func receive(_ event: HTTPEvent)
}
