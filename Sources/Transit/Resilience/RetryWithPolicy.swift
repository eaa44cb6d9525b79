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
    ///     .retry(RetryPolicy())
    /// ```
    ///
    /// - At most `policy.maxAttempts` subscriptions in all; the last failure is passed on.
    /// - Non-transient failures (a 404, a decoding error) pass through at once.
    /// - A request is sent again only if that is safe: see ``RetryPolicy``. The method comes from
    ///   the request in an HTTP error's response, or, for a transport failure (a timeout), from
    ///   the request of the ``TransportError`` ``HTTPClient`` fails with. For errors that say
    ///   neither (a bare `URLError` from a transport used without an ``HTTPClient``), pass
    ///   `method`; without it they are retried only if they mean the request never reached the
    ///   server, or if `policy.retryNonIdempotent` is `true`.
    /// - A 503's Retry-After is honoured (see ``RetryPolicy/maxWait``).
    /// - Monitors: each retry scheduled (``HTTPEvent/Kind/retryScheduled(attempt:delay:failure:)``)
    ///   and each retry the budget refuses (``HTTPEvent/Kind/retryRefusedByBudget(attempt:failure:)``)
    ///   is reported to the ``HTTPEventMonitor``s of the ``HTTPClient`` that sent the request, and
    ///   every attempt is one request to them. The operator is not told about that client: the
    ///   client subscribed within the operator's subscription tells it (through the
    ///   `SubscriptionContext` the subscription carries down), so a policy (or budget) shared by
    ///   several clients reports each retry to the client it belongs to. A signal that no client
    ///   sends (a bare transport) is retried the same way, unreported.
    /// - Cancelling during a wait cancels the scheduled action: no further request is sent.
    /// - Any number of attempts runs in constant stack and memory: one state object per
    ///   subscription subscribes to the upstream again from the scheduled action (or, when the
    ///   scheduler runs the action at once, from a loop), and each attempt's subscription is
    ///   released when it fails. `maxAttempts: .max` through an outage of days is safe.
    ///
    /// - Parameters:
    ///   - policy: the back-off and what to retry.
    ///   - method: the method of the request this signal sends, if known.
    ///   - scheduler: where waits are timed, and the clock of the policy's ``RetryBudget``. Unless
    ///     given, the clock of the ``HTTPClient`` that sends the request (its
    ///     ``HTTPClient/Configuration/scheduler``), or the global dispatch queue for a signal that
    ///     no client sends.
    public func retry(
        _ policy: RetryPolicy,
        method: HTTPMethod? = nil,
        scheduler: (any Scheduler)? = nil
    ) -> Signal<Output, any Error> {
        retried(policy, method: method, scheduler: scheduler)
    }

    /// The body of ``retry(_:method:scheduler:)``.
    ///
    /// Compiled also for ``HTTPResponse``, the output it almost always has (it goes right after
    /// ``catchHTTPErrors()``): called from another module, a generic body asks the runtime for
    /// the metadata of every type that depends on `Output`, and the specialisation's entry check
    /// spares a request those look-ups.
    @_specialize(where Output == HTTPResponse)
    func retried(_ policy: RetryPolicy, method: HTTPMethod?, scheduler: (any Scheduler)?) -> Signal<Output, any Error> {
        let upstream = self
        return Signal(subscribing: { observer, context in
            let retrier = PolicyRetrier(
                upstream: upstream, downstream: observer, policy: policy, method: method, scheduler: scheduler,
                context: RequestContext.joining(context)
            )
            retrier.start()
            return { retrier.cancel() }
        })
    }
}

/// The state of one subscription to `retry(_ policy:)`: which attempt is running, its
/// cancellation scope, the pending wait, and the downstream.
///
/// Attempts never nest. A failure cancels its attempt's scope (releasing that subscription) and
/// schedules the next attempt; the scheduled action subscribes to the upstream from the
/// scheduler's stack. A scheduler that runs the action at once, inside the failure (an
/// `ImmediateScheduler` with an upstream that fails synchronously), finds an attempt still being
/// subscribed: it queues the next one, and the loop in ``run(_:_:)`` subscribes it when the
/// current call returns. So the stack stays flat and at most one attempt, one wait and one
/// state object exist per subscription, whatever the number of attempts.
///
/// Thread safety: all state is behind `lock`; the upstream, the downstream, the policy's
/// random source and the scheduler are called outside it.
private final class PolicyRetrier<Output: Sendable>: @unchecked Sendable {
    private struct State {
        /// The number of the attempt running or about to run (1 for the first).
        var attempt = 1
        /// The cancellation scope of that attempt.
        var current: CancellationToken?
        /// The wait before the next attempt, once scheduled.
        var wait: (any Cancellable)?
        /// Identifies the wait in flight; a fired or cancelled wait clears it.
        var waitID: UInt64?
        var nextWaitID: UInt64 = 0
        /// A thread is in ``run(_:_:)`` subscribing to an attempt.
        var subscribing = false
        /// An attempt that became due while another was being subscribed.
        var queued: (number: Int, scope: CancellationToken)?
        /// The request of the client that failed, handed over to the next attempt (so that it
        /// continues that request: see ``HTTPEventSink/handOver()``): ended here if the
        /// subscription is cancelled during the wait.
        var handedOver: HTTPEventSink?
        /// The request was counted in the policy's budget.
        var recorded = false
        /// Cancelled, or the terminal event was passed on.
        var ended = false
        var downstream: Observer<Output, any Error>?
    }

    private let upstream: Signal<Output, any Error>
    private let policy: RetryPolicy
    private let method: HTTPMethod?
    /// The scheduler the operator was given, if any.
    private let given: (any Scheduler)?
    /// What every attempt's subscription carries: the request context among it.
    private let context: SubscriptionContext
    /// The client's clock and request, once a client is subscribed.
    private let request: RequestContext
    /// The lock of `unsafeState`, held inline: one allocation fewer per request than a `Locked`.
    private let lock = Lock()
    /// Touched only inside ``withState(_:)``, which is why the class may be `@unchecked Sendable`.
    @exclusivity(unchecked) private var unsafeState: State

    init(
        upstream: Signal<Output, any Error>,
        downstream: Observer<Output, any Error>,
        policy: RetryPolicy,
        method: HTTPMethod?,
        scheduler: (any Scheduler)?,
        context: SubscriptionContext
    ) {
        self.upstream = upstream
        self.policy = policy
        self.method = method
        given = scheduler
        self.context = context
        request = RequestContext.of(context)
        unsafeState = State(downstream: downstream)
    }

    /// Where waits and the budget are timed: the given scheduler, else the client's.
    private var scheduler: any Scheduler {
        request.scheduler(given: given)
    }

    /// Counts the request in the policy's budget, once, on ``scheduler``: when the first
    /// attempt's subscription has returned (the client it reached has told its clock by then),
    /// or at its failure if that came first.
    private func recordRequest() {
        guard let budget = policy.budget, withState({ state in
            defer { state.recorded = true }
            return !state.recorded
        }) else { return }
        budget.recordRequest(on: scheduler)
    }

    /// Runs `body` with the lock held and the state to change.
    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.withLock { body(&unsafeState) }
    }

    /// Subscribes the first attempt.
    func start() {
        let scope = CancellationToken(context: context)
        let proceed = withState { state -> Bool in
            guard !state.ended else { return false }
            state.current = scope
            state.subscribing = true
            return true
        }
        guard proceed else { return }
        run(1, scope)
    }

    /// Subscribes attempt `number` in `scope`, then every attempt queued meanwhile. A client
    /// subscribed within finds in the context the request the previous attempt handed over, and
    /// continues it.
    private func run(_ number: Int, _ scope: CancellationToken) {
        var next: (number: Int, scope: CancellationToken)? = (number, scope)
        while let (number, scope) = next {
            upstream.observe(Observer<Output, any Error> { [self] event in receive(event, from: number) }, in: scope)
            if number == 1 { recordRequest() }
            next = withState { state in
                defer { state.queued = nil }
                guard let queued = state.queued, !state.ended else {
                    state.subscribing = false
                    return nil
                }
                return (queued.number, queued.scope)
            }
        }
    }

    private func receive(_ event: Event<Output, any Error>, from number: Int) {
        switch event {
        case .value:
            let downstream = withState { state in
                !state.ended && state.attempt == number ? state.downstream : nil
            }
            downstream?.send(event)
        case .finished:
            finish(with: event, from: number)
        case .failed(let error):
            guard withState({ !$0.ended && $0.attempt == number }) else { return }
            // The policy's random source is user code: it runs outside the lock.
            guard let delay = policy.retryDelay(after: error, attempt: number, method: method) else {
                finish(with: event, from: number)
                return
            }
            if number == 1 { recordRequest() }
            let sending = request.request
            if let budget = policy.budget, !budget.withdrawRetry(on: scheduler, failure: error, events: sending) {
                request.report(.retryRefusedByBudget(attempt: number, failure: error), about: error)
                finish(with: .failed(RetryBudgetExhausted(failure: error)), from: number)
                return
            }
            request.report(.retryScheduled(attempt: number, delay: delay, failure: error), about: error)
            scheduleAttempt(after: delay, following: number, handingOver: sending)
        }
    }

    /// Passes the terminal `event` of attempt `number` on, unless the subscription already ended
    /// or `number` is no longer the current attempt.
    private func finish(with event: Event<Output, any Error>, from number: Int) {
        var scope: CancellationToken?
        let downstream = withState { state -> Observer<Output, any Error>? in
            guard !state.ended, state.attempt == number else { return nil }
            state.ended = true
            scope = state.current
            state.current = nil
            defer { state.downstream = nil }
            return state.downstream
        }
        guard let downstream else { return }
        scope?.cancel()
        downstream.send(event)
    }

    /// Ends attempt `number` (its subscription is released) and schedules attempt `number + 1`
    /// after `delay`, continuing the request of `sink` (the failed attempt's client, if any).
    private func scheduleAttempt(after delay: Duration, following number: Int, handingOver sink: HTTPEventSink?) {
        var finished: CancellationToken?
        let id = withState { state -> UInt64? in
            guard !state.ended, state.attempt == number else { return nil }
            // Before the attempt's subscription is released: its end is not the request's.
            sink?.handOver()
            state.handedOver = sink
            finished = state.current
            state.current = nil
            let id = state.nextWaitID
            state.nextWaitID += 1
            state.waitID = id
            return id
        }
        guard let id else { return }
        finished?.cancel()
        let wait = scheduler.schedule(after: ScheduledSubscription.clamped(delay)) { [self] in
            fire(id)
        }
        // Keep the wait for cancellation, unless it already ran (a scheduler that runs it at
        // once) or the subscription ended meanwhile.
        let cancelNow = withState { state -> Bool in
            guard state.waitID == id else { return state.ended }
            state.wait = wait
            return false
        }
        if cancelNow { wait.cancel() }
    }

    /// The wait `id` is over: starts the next attempt, or queues it if an attempt is still being
    /// subscribed on another call (see ``run(_:_:)``).
    private func fire(_ id: UInt64) {
        let scope = CancellationToken(context: context)
        let claimed = withState { state -> Int? in
            guard !state.ended, state.waitID == id else { return nil }
            state.waitID = nil
            state.wait = nil
            state.attempt += 1
            state.current = scope
            if state.subscribing {
                state.queued = (state.attempt, scope)
                return nil
            }
            state.subscribing = true
            return state.attempt
        }
        if let claimed { run(claimed, scope) }
    }

    /// Cancels the running attempt or the pending wait and releases the downstream. Called by
    /// the subscription's teardown: on cancellation, and after the terminal event.
    func cancel() {
        var scope: CancellationToken?
        var wait: (any Cancellable)?
        var queued: CancellationToken?
        var handedOver: HTTPEventSink?
        let downstream = withState { state -> Observer<Output, any Error>? in
            guard !state.ended else { return nil }
            state.ended = true
            scope = state.current
            wait = state.wait
            queued = state.queued?.scope
            handedOver = state.handedOver
            state.handedOver = nil
            state.current = nil
            state.wait = nil
            state.waitID = nil
            state.queued = nil
            defer { state.downstream = nil }
            return state.downstream
        }
        wait?.cancel()
        scope?.cancel()
        queued?.cancel()
        // Cancelled while waiting: the request handed over ends here.
        handedOver?.endIfUnclaimed(.cancelled)
        // Released here, after the lock.
        withExtendedLifetime(downstream) {}
    }
}
