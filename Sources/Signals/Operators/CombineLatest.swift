import Synchronization

extension Signal {
    /// Sends the latest value of each signal, as a pair, every time either sends a value — once
    /// both have sent at least one.
    ///
    /// Guarantees:
    /// - Nothing is sent until both signals have sent a value; values of one side that arrive
    ///   before the other's first value are remembered (only the latest).
    /// - Finishes when both signals have finished, or as soon as one finishes without having
    ///   sent any value (no pair can ever be formed; the other is then cancelled).
    /// - The first failure of either signal cancels the other and fails the result once.
    /// - Cancelling cancels both signals.
    /// - Pairs are delivered one at a time, in the order the values were received, even when the
    ///   two signals send on different threads.
    public func combineLatest<Other>(_ other: Signal<Other, Failure>) -> Signal<(Output, Other), Failure> {
        let left = self.body
        let right = other.body
        return Signal<(Output, Other), Failure>(unchecked: { observer, token in
            let state = CombineLatestState<Output, Other, Failure>(downstream: observer)
            guard token.add(state) else { return }
            left(Observer { [state] event in state.receiveLeft(event) }, state.scope)
            right(Observer { [state] event in state.receiveRight(event) }, state.scope)
        })
    }
}

/// The state of one `combineLatest` subscription: the latest value of each side and the
/// serialised output, under one lock. Both upstreams are subscribed with `scope`.
///
/// Thread safety: all mutable state is behind a `Mutex`; upstreams and the downstream run
/// outside it.
final class CombineLatestState<Left: Sendable, Right: Sendable, Failure: Error>: Cancellable {
    typealias Output = (Left, Right)

    /// What a thread must do after a decision: deliver `event` (if `target` is set), and cancel
    /// the upstreams if the result `ended`.
    private typealias Step = (event: Event<Output, Failure>, target: Observer<Output, Failure>?, ended: Bool)

    private struct State {
        var emitter: Emitter<Output, Failure>
        var left: Left?
        var right: Right?
        var leftFinished = false
        var rightFinished = false

        /// Nothing more can be sent: both finished, or one finished without a value.
        var isExhausted: Bool {
            (leftFinished && rightFinished) || (leftFinished && left == nil) || (rightFinished && right == nil)
        }

        /// After a value: the pair, if both sides have one.
        mutating func combine() -> Step? {
            guard let left, let right else { return nil }
            let pair = Event<Output, Failure>.value((left, right))
            return (pair, emitter.accept(pair), false)
        }

        /// After a side finished: the end, if nothing more can be sent.
        mutating func checkEnd() -> Step? {
            guard isExhausted, !emitter.isClosed else { return nil }
            defer {
                left = nil
                right = nil
            }
            return (.finished, emitter.accept(.finished), true)
        }
    }

    let scope = CancellationToken()
    private let state: Mutex<State>

    init(downstream: Observer<Output, Failure>) {
        state = Mutex(State(emitter: Emitter(downstream)))
    }

    func receiveLeft(_ event: Event<Left, Failure>) {
        switch event {
        case .value(let value):
            handle(state.withLock { state in
                guard !state.emitter.isClosed else { return nil }
                state.left = value
                return state.combine()
            })
        case .finished:
            handle(state.withLock { state in
                state.leftFinished = true
                return state.checkEnd()
            })
        case .failed(let error):
            fail(error)
        }
    }

    func receiveRight(_ event: Event<Right, Failure>) {
        switch event {
        case .value(let value):
            handle(state.withLock { state in
                guard !state.emitter.isClosed else { return nil }
                state.right = value
                return state.combine()
            })
        case .finished:
            handle(state.withLock { state in
                state.rightFinished = true
                return state.checkEnd()
            })
        case .failed(let error):
            fail(error)
        }
    }

    private func fail(_ error: Failure) {
        let event = Event<Output, Failure>.failed(error)
        let (target, leftovers) = state.withLock { state in
            defer {
                state.left = nil
                state.right = nil
            }
            return (state.emitter.accept(event), (state.left, state.right))
        }
        _ = leftovers
        handle((event, target, true))
    }

    /// Cancels both upstreams once the result has ended, then delivers what this thread must.
    private func handle(_ step: Step?) {
        guard let step else { return }
        if step.ended { scope.cancel() }
        guard let target = step.target else { return }
        Emitter.deliver(step.event, to: target) { state.withLock { $0.emitter.next() } }
    }

    func cancel() {
        let released = state.withLock { state in
            defer {
                state.left = nil
                state.right = nil
            }
            return (state.emitter.close(), state.left, state.right)
        }
        scope.cancel()
        _ = released
    }
}
