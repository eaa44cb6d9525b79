import Synchronization

extension Signal {
    /// Transforms every value into a signal and merges the values of those inner signals.
    ///
    /// - Parameters:
    ///   - maxConcurrent: how many inner signals may be subscribed at once. Values that arrive
    ///     while the limit is reached wait, in order, and their inner signals are subscribed as
    ///     earlier ones finish. Values below 1 count as 1; `1` runs the inner signals one after
    ///     the other, in order.
    ///   - transform: builds the inner signal for a value. It runs when the inner signal is about
    ///     to be subscribed (for a waiting value, when a slot frees up).
    ///
    /// Guarantees:
    /// - Finishes when the upstream and every inner signal have finished.
    /// - The first failure (upstream or inner) cancels the upstream and every inner signal and
    ///   fails the result once.
    /// - Cancelling cancels the upstream and every inner signal (each one's teardown runs).
    /// - Values of inner signals running on several threads are delivered one at a time.
    /// - An inner signal is released (its token cancelled) as soon as it finishes, so a
    ///   long-lived upstream does not accumulate finished inners. Inner signals that finish
    ///   synchronously are subscribed in a loop, not by recursion: the stack does not grow with
    ///   the number of waiting values.
    @inlinable
    public func flatMap<T>(
        maxConcurrent: Int = .max,
        _ transform: @escaping @Sendable (Output) -> Signal<T, Failure>
    ) -> Signal<T, Failure> {
        let body = self.body
        let limit = Swift.max(1, maxConcurrent)
        return Signal<T, Failure>(unchecked: { observer, token in
            let state = FlatMapState(downstream: observer, limit: limit, transform: transform, context: token.context)
            guard token.add(state) else { return }
            body(Observer { [state] event in state.receiveUpstream(event) }, state.scope)
        })
    }
}

extension Signal where Failure == Never {
    /// Transforms every value of a signal that cannot fail into a signal that can, and merges
    /// their values. See the general `flatMap(maxConcurrent:_:)` for the guarantees; the first
    /// inner failure fails the result.
    ///
    /// Disfavoured so that, when the upstream's failure type is inferred (`Signal(value: x)`),
    /// the general overload wins instead of making the call ambiguous.
    @_disfavoredOverload
    @inlinable
    public func flatMap<T, E: Error>(
        maxConcurrent: Int = .max,
        _ transform: @escaping @Sendable (Output) -> Signal<T, E>
    ) -> Signal<T, E> {
        setFailureType(to: E.self).flatMap(maxConcurrent: maxConcurrent, transform)
    }
}

/// The state of one `flatMap` subscription.
///
/// `scope` is the token of the upstream, and every inner signal's token is a child of it: failing
/// or cancelling cancels `scope`, which reaches everything at once. The accounting (active inners,
/// waiting values) and the output serialisation share one lock.
///
/// Thread safety: all mutable state is behind a `Lock`; user code (the transform, inner
/// signals, the downstream) runs outside it, and what the subscription drops at its end is
/// released outside it too.
///
/// Everything here is `@inlinable` so that it is specialised for the concrete types in the
/// caller's module: unspecialised generic code looks up type metadata at run time, which costs
/// more than the work itself on this hot path (`Signal(value:).flatMap { … }` runs per request).
@usableFromInline
final class FlatMapState<Input: Sendable, Output: Sendable, Failure: Error>: Cancellable, @unchecked Sendable {
    // @unchecked: all mutable state is `unsafeState`, touched only under `lock`.
    @usableFromInline
    typealias Transform = @Sendable (Input) -> Signal<Output, Failure>

    @usableFromInline
    typealias TransformBox = SignalTransform<Input, Output, Failure>

    /// What a subscription drops at its end, to be released outside the lock.
    @usableFromInline
    typealias Leftovers = (TransformBox?, FIFOBuffer<Input>)

    @usableFromInline
    struct State {
        @usableFromInline var emitter: Emitter<Output, Failure>
        /// Dropped at the terminal event or cancellation, so a token kept after the end does not
        /// keep what the closure captured.
        @usableFromInline var transform: TransformBox?
        @usableFromInline var upstreamFinished = false
        /// Inner signals subscribed (or about to be) and not yet finished.
        @usableFromInline var active = 0
        /// A thread is running the subscription loop; others leave values in `waiting`.
        @usableFromInline var subscribing = false
        @usableFromInline var waiting = FIFOBuffer<Input>()

        @inlinable
        init(emitter: Emitter<Output, Failure>, transform: TransformBox) {
            self.emitter = emitter
            self.transform = transform
        }

        /// Everything is done: no inner is running or waiting and the upstream finished.
        @inlinable
        var isComplete: Bool { upstreamFinished && active == 0 && waiting.isEmpty }

        @inlinable
        mutating func popWaiting() -> Input? {
            waiting.popFirst()
        }

        /// Accepts the terminal `event` (if nothing ended the subscription yet) and drops what the
        /// subscription no longer needs.
        @inlinable
        mutating func end(_ event: Event<Output, Failure>) -> (Observer<Output, Failure>?, Leftovers) {
            let target = emitter.accept(event)
            defer {
                transform = nil
                waiting = FIFOBuffer()
            }
            return (target, (transform, waiting))
        }
    }

    @usableFromInline
    enum Next {
        case none
        case finish(Observer<Output, Failure>?, Leftovers)
        case subscribe(Input, TransformBox)
    }

    /// Set once the terminal event has been delivered and everything released: `cancel()` (run
    /// for every subscription when its token goes) then has nothing to do and returns at once.
    @usableFromInline let ended = Atomic<Bool>(false)
    @usableFromInline let scope: CancellationToken
    @usableFromInline let limit: Int
    /// Guards `unsafeState`; see ``withState(_:)``.
    @usableFromInline let lock = Lock()
    /// Only touched inside ``withState(_:)``.
    @usableFromInline @exclusivity(unchecked) var unsafeState: State

    /// Runs `body` with the state, under the lock. `body` must not call out.
    @inlinable
    func withState<R>(_ body: (inout State) -> R) -> R {
        lock.withLock { body(&unsafeState) }
    }

    @inlinable
    init(downstream: Observer<Output, Failure>, limit: Int, transform: @escaping Transform, context: SubscriptionContext) {
        scope = CancellationToken(context: context)
        self.limit = limit
        unsafeState = State(emitter: Emitter(downstream), transform: TransformBox(call: transform))
    }

    @inlinable
    func receiveUpstream(_ event: Event<Input, Failure>) {
        switch event {
        case .value(let value):
            let start = withState { state -> TransformBox? in
                guard let transform = state.transform else { return nil }
                if state.subscribing || state.active >= limit {
                    state.waiting.append(value)
                    return nil
                }
                state.active += 1
                state.subscribing = true
                return transform
            }
            if let start { subscribeLoop(first: value, transform: start) }
        case .finished:
            let next = withState { state -> Next in
                state.upstreamFinished = true
                guard state.isComplete, !state.emitter.isClosed else { return .none }
                let (target, leftovers) = state.end(.finished)
                return .finish(target, leftovers)
            }
            if case .finish(let target, let leftovers) = next { end(.finished, to: target, leftovers) }
        case .failed(let error):
            fail(.failed(error))
        }
    }

    /// Subscribes `first`, then every waiting value that fits under the limit, iteratively.
    @inlinable
    func subscribeLoop(first: Input, transform: TransformBox) {
        var next = (first, transform)
        while true {
            subscribeInner(next.0, transform: next.1)
            let following = withState { state -> (Input, TransformBox)? in
                guard let transform = state.transform, state.active < limit, let value = state.popWaiting() else {
                    state.subscribing = false
                    return nil
                }
                state.active += 1
                return (value, transform)
            }
            guard let following else { return }
            next = following
        }
    }

    @inlinable
    func subscribeInner(_ value: Input, transform: TransformBox) {
        let inner = transform.call(value)
        let token = scope.makeChild()
        inner.body(Observer { [self] event in receiveInner(event, from: token) }, token)
    }

    @inlinable
    func receiveInner(_ event: Event<Output, Failure>, from token: CancellationToken) {
        switch event {
        case .value:
            let target = withState { $0.emitter.accept(event) }
            if let target { deliver(event, to: target) }
        case .finished:
            // Release the finished inner (and what it registered) at once.
            scope.remove(token)
            token.cancel()
            let next = withState { state -> Next in
                state.active -= 1
                guard !state.emitter.isClosed else { return .none }
                if state.isComplete {
                    let (target, leftovers) = state.end(.finished)
                    return .finish(target, leftovers)
                }
                guard !state.subscribing, state.active < limit, let transform = state.transform,
                      let value = state.popWaiting() else {
                    return .none
                }
                state.active += 1
                state.subscribing = true
                return .subscribe(value, transform)
            }
            switch next {
            case .none: break
            case .finish(let target, let leftovers): end(.finished, to: target, leftovers)
            case .subscribe(let value, let transform): subscribeLoop(first: value, transform: transform)
            }
        case .failed:
            fail(event)
        }
    }

    @inlinable
    func fail(_ event: Event<Output, Failure>) {
        let (target, leftovers) = withState { $0.end(event) }
        end(event, to: target, leftovers)
    }

    /// Cancels the upstream and every inner (releasing them), then delivers the terminal event if
    /// this thread must.
    @inlinable
    func end(_ event: Event<Output, Failure>, to target: Observer<Output, Failure>?, _ leftovers: Leftovers) {
        scope.cancel()
        _ = leftovers
        if let target {
            // Raised before the delivery: a downstream that cancels while it receives the terminal
            // event (retry and catch end their attempt there) finds nothing left to do.
            ended.store(true, ordering: .releasing)
            deliver(event, to: target)
        }
    }

    @inlinable
    func deliver(_ event: Event<Output, Failure>, to target: Observer<Output, Failure>) {
        Emitter.deliver(event, to: target) { withState { $0.emitter.next() } }
    }

    @usableFromInline
    func cancel() {
        guard !ended.load(ordering: .acquiring) else { return }
        let released = withState { state in
            defer {
                state.transform = nil
                state.waiting = FIFOBuffer()
            }
            return (state.emitter.close(), state.transform, state.waiting)
        }
        scope.cancel()
        _ = released
    }
}
