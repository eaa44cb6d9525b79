import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Failure == any Error {
    /// On a 429 (``HTTPClientError/tooManyRequests(retryAfter:response:)``), waits as long as the
    /// server asked and subscribes to the upstream again, once.
    ///
    /// Place it after ``catchHTTPErrors()``, which parses `Retry-After` (delay-seconds, fractional
    /// seconds, and the three HTTP-date forms) into the error's `retryAfter`.
    ///
    /// - The wait is `retryAfter`, or `maxWait` when the server sent no readable header.
    /// - If the server asks for longer than `maxWait`, the signal fails at once with the
    ///   429 (its `retryAfter` tells the caller how long the server wants), rather than retrying
    ///   early: an early retry would only be refused again.
    /// - A 429 on the retried request fails the signal with that 429.
    /// - Values and other errors (a 401 among them) pass through untouched.
    /// - Cancelling during the wait cancels the scheduled action: no further request is sent.
    /// - The wait is reported to the monitors of the client that answered 429, as
    ///   ``HTTPEvent/Kind/retryScheduled(attempt:delay:failure:)`` (attempt 1), and the request
    ///   sent again is the same request to them (the client subscribed within the operator's
    ///   subscription tells it, through the `SubscriptionContext`).
    ///
    /// - Parameters:
    ///   - maxWait: the longest wait the caller accepts, as ``Cooldowns``' `maxWait` and
    ///     ``RetryPolicy/maxWait`` are. Negative means zero.
    ///   - scheduler: where the wait is timed. Unless given, the clock of the ``HTTPClient``
    ///     that answered (its ``HTTPClient/Configuration/scheduler``), or the global dispatch
    ///     queue for a signal that no client sends.
    public func respondToRateLimiting(
        maxWait: Duration,
        scheduler: (any Scheduler)? = nil
    ) -> Signal<Output, any Error> {
        respondingToRateLimiting(maxWait: maxWait, scheduler: scheduler)
    }

    /// The body of ``respondToRateLimiting(maxWait:scheduler:)``.
    ///
    /// Compiled also for ``HTTPResponse``, the output it almost always has (it goes right after
    /// ``catchHTTPErrors()``): called from another module, a generic body asks the runtime for
    /// the metadata of every type that depends on `Output`, and the specialisation's entry check
    /// spares a request those look-ups.
    @_specialize(where Output == HTTPResponse)
    func respondingToRateLimiting(maxWait: Duration, scheduler given: (any Scheduler)?) -> Signal<Output, any Error> {
        let upstream = self
        // A cap at or past the longest wait the operators time accepts any wait, however long.
        let cap = maxWait >= ScheduledSubscription.longest ? TimeInterval.infinity : ScheduledSubscription.seconds(maxWait)
        return catching { error, context -> Signal<Output, any Error> in
            guard let clientError = error as? HTTPClientError,
                  case .tooManyRequests(let retryAfter, _) = clientError
            else { return Signal(error: error) }
            // In seconds, as the caller's cap is: `RetryAfter.longest` is longer than any cap.
            let wait = retryAfter.map { $0 >= RetryAfter.longest ? .greatestFiniteMagnitude : ScheduledSubscription.seconds($0) } ?? cap
            guard wait <= cap else { return Signal(error: error) }
            // The client subscribed within this subscription attached its clock and request.
            let request = RequestContext.of(context)
            request.report(.retryScheduled(attempt: 1, delay: ScheduledSubscription.duration(seconds: wait), failure: error), about: error)
            let scheduler = request.scheduler(given: given)
            guard let sending = request.request else { return ScheduledSubscription.signal(upstream, after: wait, on: scheduler) }
            // The request is sent again as the same request (see `HTTPEventSink.handOver()`).
            sending.handOver()
            return ScheduledSubscription.signal(upstream, after: wait, on: scheduler).handleEvents(receiveCancel: {
                sending.endIfUnclaimed(.cancelled)
            })
        }
        .withContext(RequestContext.joining)
    }
}
