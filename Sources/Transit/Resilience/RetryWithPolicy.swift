import Dispatch
import Signals

extension Signal where Failure == any Error {
    /// On a transient failure, waits a jittered exponential back-off and subscribes to the
    /// upstream again, as `policy` says (see ``RetryPolicy``).
    ///
    /// Place it after ``catchHTTPErrors()`` so that 5xx responses are failures:
    ///
    /// ```swift
    /// api.get(endpoint: "posts")
    ///     .catchHTTPErrors()
    ///     .retry(.default)
    /// ```
    ///
    /// - At most `policy.maxAttempts` subscriptions in all; the last failure is passed on.
    /// - Non-transient failures (a 404, a decoding error) pass through at once.
    /// - A request is sent again only if that is safe: see ``RetryPolicy``. The method comes from
    ///   the request in an HTTP error's response, or, for a transport error (a timeout), from the
    ///   method ``HTTPClient`` records in the `URLError`. For errors that say neither (a
    ///   transport used without an ``HTTPClient``), pass `method`; without it they are retried
    ///   only if they mean the request never reached the server, or if
    ///   `policy.retryNonIdempotent` is `true`.
    /// - A 503's Retry-After is honoured (see ``RetryPolicy/maxRetryAfter``).
    /// - Cancelling during a wait cancels the scheduled action: no further request is sent.
    ///
    /// - Parameters:
    ///   - policy: the back-off and what to retry.
    ///   - method: the method of the request this signal sends, if known.
    ///   - scheduler: where waits are timed; a `TestScheduler` in tests.
    public func retry(
        _ policy: RetryPolicy,
        method: HTTPMethod? = nil,
        scheduler: some Scheduler = DispatchQueue.global()
    ) -> Signal<Output, any Error> {
        retrying(attempt: 1, policy: policy, method: method, scheduler: scheduler)
    }

    /// The upstream as attempt number `attempt`; its failure may lead to attempt `attempt + 1`.
    private func retrying(
        attempt: Int,
        policy: RetryPolicy,
        method: HTTPMethod?,
        scheduler: some Scheduler
    ) -> Signal<Output, any Error> {
        let upstream = self
        return self.catch { error -> Signal<Output, any Error> in
            guard let delay = policy.retryDelay(after: error, attempt: attempt, method: method) else {
                return Signal(error: error)
            }
            let next = upstream.retrying(attempt: attempt + 1, policy: policy, method: method, scheduler: scheduler)
            return ScheduledSubscription.signal(next, after: delay, on: scheduler)
        }
    }
}
