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
///             record(sent: attempt.sentBytes, received: attempt.receivedBytes, took: attempt.duration)
///         case .retryScheduled, .retryRefusedByBudget:
///             log(event.description)          // redacted: safe to log
///         default:
///             break
///         }
///     }
/// }
/// let client = HTTPClient(monitors: [Metrics()])
/// ```
///
/// **Compatibility.** The three older methods (``requestWillSend(_:)``,
/// ``request(_:didReceive:)``, ``request(_:didFailWith:)``) still work: the default
/// ``receive(_:)`` calls them for ``HTTPEvent/Kind/requestStarted``,
/// ``HTTPEvent/Kind/responseReceived(_:)`` and ``HTTPEvent/Kind/requestFailed(_:)``. A monitor
/// that implements ``receive(_:)`` itself sees those kinds there, and the three methods are not
/// called unless it calls them.
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
    /// Receives one event of a request's lifecycle. The default implementation calls the three
    /// older methods for the request-level kinds and ignores the others.
    func receive(_ event: HTTPEvent)
    /// The request is about to be sent (after every modifier and default header was applied),
    /// before any cooldown or rate-limit wait. Called once per subscription to the client's
    /// signal — so once per retry of a chain, but not per redirect hop or failover attempt (see
    /// ``HTTPEvent/Kind/attemptStarted(id:)`` for those).
    func requestWillSend(_ request: URLRequest)
    /// The client delivered a buffered response, whatever its status code.
    func request(_ request: URLRequest, didReceive response: HTTPResponse)
    /// The request failed (connection refused, timed out, deadline passed, …).
    func request(_ request: URLRequest, didFailWith error: any Error)
}

extension HTTPEventMonitor {
    public func receive(_ event: HTTPEvent) {
        guard let request = event.request else { return }
        switch event.kind {
        case .requestStarted: requestWillSend(request)
        case .responseReceived(let response): self.request(request, didReceive: response)
        case .requestFailed(let error): self.request(request, didFailWith: error)
        default: break
        }
    }

    public func requestWillSend(_ request: URLRequest) {}
    public func request(_ request: URLRequest, didReceive response: HTTPResponse) {}
    public func request(_ request: URLRequest, didFailWith error: any Error) {}
}
