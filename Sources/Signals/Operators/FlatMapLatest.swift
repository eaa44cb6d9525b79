import Synchronization

extension Signal {
    /// Transforms every value into a signal and forwards the values of the newest one only:
    /// each upstream value cancels the previous inner signal and subscribes the next.
    ///
    /// Use it for "the latest request wins": a search field, a refresh button.
    ///
    /// Guarantees:
    /// - When a new value arrives, the previous inner signal is cancelled (its teardown runs)
    ///   before the new one is subscribed; nothing it sends afterwards is delivered.
    /// - Finishes when the upstream has finished and the current inner signal (if any) has
    ///   finished.
    /// - The first failure, of the upstream or of the current inner signal, cancels the other and
    ///   fails the result once.
    /// - Cancelling cancels the upstream and the current inner signal.
    @inlinable
    public func flatMapLatest<T>(
        _ transform: @escaping @Sendable (Output) -> Signal<T, Failure>
    ) -> Signal<T, Failure> {
        let body = self.body
        return Signal<T, Failure>(unchecked: { observer, token in
            let state = FlatMapLatestState(downstream: observer, transform: transform, context: token.context)
            guard token.add(state) else { return }
            body(Observer { [state] event in state.receiveUpstream(event) }, state.upstream)
        })
    }
}

extension Signal where Failure == Never {
    /// Transforms every value of a signal that cannot fail into a signal that can, and forwards
    /// the values of the newest one only. See the general `flatMapLatest(_:)` for the guarantees.
    ///
    /// Disfavoured so that, when the upstream's failure type is inferred, the general overload
    /// wins instead of making the call ambiguous.
    @_disfavoredOverload
    @inlinable
    public func flatMapLatest<T, E: Error>(
        _ transform: @escaping @Sendable (Output) -> Signal<T, E>
    ) -> Signal<T, E> {
        setFailureType(to: E.self).flatMapLatest(transform)
    }
}

/// The state of one `flatMapLatest` subscription.
///
/// Each inner signal gets its own token and a generation number; events from an inner whose
/// generation is not the current one are dropped under the lock that also serialises the output.
///
/// Thread safety: all mutable state is behind a `Locked`; user code runs outside it.
///
/// `@inlinable` throughout so that it is specialised for the caller's concrete types (see
/// `FlatMapState`).
@usableFromInline
final class FlatMapLatestState<Input: Sendable, Output: Sendable, Failure: Error>: Cancellable {
    @usableFromInline
    typealias Transform = @Sendable (Input) -> Signal<Output, Failure>

    @usableFromInline
    typealias TransformBox = SignalTransform<Input, Output, Failure>

    @usableFromInline
    struct State {
        @usableFromInline var emitter: Emitter<Output, Failure>
        @usableFromInline var transform: TransformBox?
        @usableFromInline var upstreamFinished = false
        @usableFromInline var generation: UInt64 = 0
        /// The token of the current inner signal, while it runs.
        @usableFromInline var current: CancellationToken?

        @inlinable
        init(emitter: Emitter<Output, Failure>, transform: TransformBox) {
            self.emitter = emitter
            self.transform = transform
        }

        /// Accepts the terminal `event` and drops the transform and the current inner's token,
        /// returning them to be cancelled and released outside the lock.
        @inlinable
        mutating func end(_ event: Event<Output, Failure>) -> Ending {
            let target = emitter.accept(event)
            defer {
                transform = nil
                current = nil
            }
            return (target, transform, current)
        }
    }

    @usableFromInline
    typealias Ending = (Observer<Output, Failure>?, TransformBox?, CancellationToken?)

    @usableFromInline
    enum Step {
        case none
        case release(CancellationToken?)
        case end(Ending)
    }

    /// Set once the terminal event has been delivered and everything released, so `cancel()`
    /// returns at once.
    @usableFromInline let ended = Atomic<Bool>(false)
    @usableFromInline let upstream: CancellationToken
    @usableFromInline let state: Locked<State>

    @inlinable
    init(downstream: Observer<Output, Failure>, transform: @escaping Transform, context: SubscriptionContext) {
        upstream = CancellationToken(context: context)
        state = Locked(State(emitter: Emitter(downstream), transform: TransformBox(call: transform)))
    }

    @inlinable
    func receiveUpstream(_ event: Event<Input, Failure>) {
        switch event {
        case .value(let value):
            guard let transform = state.withLock({ $0.transform }) else { return }
            let inner = transform.call(value)
            let token = CancellationToken(context: upstream.context)
            let switched = state.withLock { state -> (UInt64, CancellationToken?)? in
                guard state.transform != nil else { return nil }
                state.generation &+= 1
                defer { state.current = token }
                return (state.generation, state.current)
            }
            guard let (generation, previous) = switched else { return }
            previous?.cancel()
            inner.body(Observer { [self] event in receiveInner(event, generation: generation) }, token)
        case .finished:
            let ending = state.withLock { state -> Ending? in
                state.upstreamFinished = true
                guard state.current == nil, !state.emitter.isClosed else { return nil }
                return state.end(.finished)
            }
            if let ending { end(.finished, ending) }
        case .failed(let error):
            end(.failed(error), state.withLock { $0.end(.failed(error)) })
        }
    }

    @inlinable
    func receiveInner(_ event: Event<Output, Failure>, generation: UInt64) {
        switch event {
        case .value:
            let target = state.withLock { state -> Observer<Output, Failure>? in
                guard state.generation == generation else { return nil }
                return state.emitter.accept(event)
            }
            if let target { deliver(event, to: target) }
        case .finished:
            let step = state.withLock { state -> Step in
                guard state.generation == generation, !state.emitter.isClosed else { return .none }
                if state.upstreamFinished { return .end(state.end(.finished)) }
                defer { state.current = nil }
                return .release(state.current)
            }
            switch step {
            case .none: break
            case .release(let token): token?.cancel()
            case .end(let ending): end(.finished, ending)
            }
        case .failed:
            let ending = state.withLock { state -> Ending? in
                guard state.generation == generation else { return nil }
                return state.end(event)
            }
            if let ending { end(event, ending) }
        }
    }

    /// Cancels the upstream and the current inner, then delivers the terminal event if this
    /// thread must.
    @inlinable
    func end(
        _ event: Event<Output, Failure>,
        _ ending: Ending
    ) {
        let (target, transform, inner) = ending
        inner?.cancel()
        upstream.cancel()
        _ = transform
        if let target {
            deliver(event, to: target)
            ended.store(true, ordering: .releasing)
        }
    }

    @inlinable
    func deliver(_ event: Event<Output, Failure>, to target: Observer<Output, Failure>) {
        Emitter.deliver(event, to: target) { state.withLock { $0.emitter.next() } }
    }

    @usableFromInline
    func cancel() {
        guard !ended.load(ordering: .acquiring) else { return }
        let released = state.withLock { state in
            defer {
                state.transform = nil
                state.current = nil
            }
            return (state.emitter.close(), state.transform, state.current)
        }
        released.2?.cancel()
        upstream.cancel()
    }
}
