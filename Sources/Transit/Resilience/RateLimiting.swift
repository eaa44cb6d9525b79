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
    ///   ``HTTPEvent/Kind/retryScheduled(attempt:delay:failure:)`` (attempt 1).
    ///
    /// - Parameters:
    ///   - maxWait: the longest wait the caller accepts, as ``Cooldowns``' `maxWait` and
    ///     ``RetryPolicy/maxWait`` are. Negative means zero.
    ///   - scheduler: where the wait is timed; a `TestScheduler` in tests.
    public func respondToRateLimiting(
        maxWait: Duration,
        scheduler: some Scheduler = DispatchQueue.transitGlobal
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
    func respondingToRateLimiting(maxWait: Duration, scheduler: any Scheduler) -> Signal<Output, any Error> {
        let upstream = self
        // A cap at or past the longest wait the operators time accepts any wait, however long.
        let cap = maxWait >= ScheduledSubscription.longest ? TimeInterval.infinity : ScheduledSubscription.seconds(maxWait)
        return self.catch { error -> Signal<Output, any Error> in
            guard let clientError = error as? HTTPClientError,
                  case .tooManyRequests(let retryAfter, _) = clientError
            else { return Signal(error: error) }
            // In seconds, as the caller's cap is: `RetryAfter.longest` is longer than any cap.
            let wait = retryAfter.map { $0 >= RetryAfter.longest ? .greatestFiniteMagnitude : ScheduledSubscription.seconds($0) } ?? cap
            guard wait <= cap else { return Signal(error: error) }
            HTTPEventSink.report(
                .retryScheduled(attempt: 1, delay: ScheduledSubscription.duration(seconds: wait), failure: error), about: error
            )
            guard let request = HTTPEventSink.of(error) else { return ScheduledSubscription.signal(upstream, after: wait, on: scheduler) }
            // The request is sent again as the same request (see `HTTPEventSink.handOver()`).
            request.handOver()
            return ScheduledSubscription.signal(request.continuing(upstream), after: wait, on: scheduler).handleEvents(receiveCancel: {
                request.endIfUnclaimed(.cancelled)
            })
        }
    }
}
