import Synchronization

extension Signal {
    /// On failure, subscribes to the upstream again, up to `times` more times.
    ///
    /// Every attempt re-runs the upstream's work from the start (request modifiers, token reads,
    /// URL building). The failure of the last attempt is passed on. Re-subscription is iterative,
    /// so an upstream that fails synchronously does not grow the stack.
    public func retry(_ times: Int) -> Signal<Output, Failure> {
        retry(times) { _ in true }
    }

    /// On a failure for which `shouldRetry` returns `true`, subscribes to the upstream again, up
    /// to `times` more times. Other failures pass through at once.
    public func retry(
        _ times: Int,
        if shouldRetry: @escaping @Sendable (Failure) -> Bool
    ) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let retrier = Retrier(body: body, downstream: observer, remaining: max(0, times), shouldRetry: shouldRetry)
            guard token.add(retrier) else { return }
            retrier.subscribe()
        })
    }
}

/// The state of one `retry` subscription. Thread safety: state behind a `Mutex`; the upstream is
/// subscribed and events are forwarded outside it. When the subscription ends (its terminal
/// event is passed on, or it is cancelled) the upstream, the downstream and the predicate are
/// released.
private final class Retrier<Output: Sendable, Failure: Error>: Cancellable {
    typealias Body = Signal<Output, Failure>.Body

    private struct State {
        var remaining: Int
        var current: CancellationToken?
        /// Cancelled, or the terminal event was passed on.
        var ended = false
        var subscribing = false
        var resubscribeRequested = false
        var body: Body?
        var downstream: Observer<Output, Failure>?
        var shouldRetry: (@Sendable (Failure) -> Bool)?

        /// Marks the subscription as ended and takes out everything it holds, so the caller
        /// releases it after the lock (a `deinit` of something the closures captured may run
        /// user code).
        mutating func end() -> Released {
            ended = true
            defer {
                body = nil
                downstream = nil
                shouldRetry = nil
                current = nil
            }
            return Released(current: current, body: body, downstream: downstream, shouldRetry: shouldRetry)
        }
    }

    private struct Released {
        var current: CancellationToken?
        var body: Body?
        var downstream: Observer<Output, Failure>?
        var shouldRetry: (@Sendable (Failure) -> Bool)?
    }

    private enum Decision {
        case retry, pass(Released), drop
    }

    private let state: Mutex<State>

    init(body: @escaping Body, downstream: Observer<Output, Failure>, remaining: Int, shouldRetry: @escaping @Sendable (Failure) -> Bool) {
        state = Mutex(State(remaining: remaining, body: body, downstream: downstream, shouldRetry: shouldRetry))
    }

    /// Subscribes to the upstream; a request made while subscribing (a synchronous failure) is
    /// handled by the loop instead of recursion.
    func subscribe() {
        let enter = state.withLock { state -> Bool in
            if state.subscribing {
                state.resubscribeRequested = true
                return false
            }
            state.subscribing = true
            return true
        }
        guard enter else { return }
        while true {
            let attempt = CancellationToken()
            let next = state.withLock { state -> (Body, Observer<Output, Failure>)? in
                guard !state.ended, let body = state.body, let downstream = state.downstream else {
                    state.subscribing = false
                    return nil
                }
                state.resubscribeRequested = false
                state.current = attempt
                return (body, downstream)
            }
            guard let (body, downstream) = next else { return }
            body(Observer { [self] event in receive(event, from: attempt, downstream: downstream) }, attempt)
            let again = state.withLock { state -> Bool in
                if state.resubscribeRequested && !state.ended { return true }
                state.subscribing = false
                return false
            }
            if !again { return }
        }
    }

    private func receive(_ event: Event<Output, Failure>, from attempt: CancellationToken, downstream: Observer<Output, Failure>) {
        let decision: Decision
        switch event {
        case .value:
            downstream.send(event)
            return
        case .finished:
            decision = state.withLock { state in
                guard !state.ended else { return .drop }
                return .pass(state.end())
            }
        case .failed(let error):
            guard let shouldRetry = state.withLock({ $0.ended ? nil : $0.shouldRetry }) else { return }
            // The predicate is user code: it runs outside the lock, and may cancel.
            let wantsRetry = shouldRetry(error)
            decision = state.withLock { state in
                guard !state.ended else { return .drop }
                if wantsRetry && state.remaining > 0 {
                    state.remaining -= 1
                    if state.current === attempt { state.current = nil }
                    return .retry
                }
                return .pass(state.end())
            }
        }
        // Ends the attempt, so everything it created is released.
        attempt.cancel()
        switch decision {
        case .retry: subscribe()
        case .pass: downstream.send(event)
        case .drop: break
        }
    }

    func cancel() {
        let released = state.withLock { state -> Released? in
            guard !state.ended else { return nil }
            return state.end()
        }
        released?.current?.cancel()
    }
}
