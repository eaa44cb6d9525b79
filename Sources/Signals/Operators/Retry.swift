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
/// subscribed and events are forwarded outside it.
private final class Retrier<Output: Sendable, Failure: Error>: Cancellable {
    typealias Body = Signal<Output, Failure>.Body

    private struct State {
        var remaining: Int
        var current: CancellationToken?
        var cancelled = false
        var subscribing = false
        var resubscribeRequested = false
    }

    private let body: Body
    private let downstream: Observer<Output, Failure>
    private let shouldRetry: @Sendable (Failure) -> Bool
    private let state: Mutex<State>

    init(body: @escaping Body, downstream: Observer<Output, Failure>, remaining: Int, shouldRetry: @escaping @Sendable (Failure) -> Bool) {
        self.body = body
        self.downstream = downstream
        self.shouldRetry = shouldRetry
        state = Mutex(State(remaining: remaining))
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
            let proceed = state.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                state.resubscribeRequested = false
                state.current = attempt
                return true
            }
            guard proceed else { return }
            body(Observer { [self] event in receive(event, from: attempt) }, attempt)
            let again = state.withLock { state -> Bool in
                if state.resubscribeRequested && !state.cancelled { return true }
                state.subscribing = false
                return false
            }
            if !again { return }
        }
    }

    private func receive(_ event: Event<Output, Failure>, from attempt: CancellationToken) {
        switch event {
        case .value:
            downstream.send(event)
        case .finished:
            end(attempt)
            downstream.send(event)
        case .failed(let error):
            let retry = shouldRetry(error) && state.withLock { state -> Bool in
                guard !state.cancelled, state.remaining > 0 else { return false }
                state.remaining -= 1
                return true
            }
            end(attempt)
            if retry {
                subscribe()
            } else {
                downstream.send(event)
            }
        }
    }

    /// Ends an attempt: cancels its token so everything it created is released.
    private func end(_ attempt: CancellationToken) {
        state.withLock { state in
            if state.current === attempt { state.current = nil }
        }
        attempt.cancel()
    }

    func cancel() {
        let current = state.withLock { state -> CancellationToken? in
            state.cancelled = true
            defer { state.current = nil }
            return state.current
        }
        current?.cancel()
    }
}
