import Synchronization

/// What sets one two-sided operator (`zip`, `combineLatest`) apart from another: how the values
/// of each side are kept, when they make a pair, and when no further pair can be sent.
///
/// ``PairCombiner`` runs a rule under its lock; a rule never sees the downstream.
protocol PairingRule: Sendable {
    associatedtype Left: Sendable
    associatedtype Right: Sendable

    /// No value kept on either side.
    init()

    /// Keeps `value` from the left signal; returns the pair to send now, if one is ready, and
    /// the value `value` replaced, if any (released by the caller after its lock).
    mutating func pair(afterLeft value: Left) -> (pair: (Left, Right)?, replaced: Left?)

    /// Keeps `value` from the right signal; returns the pair to send now, if one is ready, and
    /// the value `value` replaced, if any (released by the caller after its lock).
    mutating func pair(afterRight value: Right) -> (pair: (Left, Right)?, replaced: Right?)

    /// No further pair can be sent, given which sides have finished.
    func isExhausted(leftFinished: Bool, rightFinished: Bool) -> Bool
}

extension Signal {
    /// Subscribes this signal (left) and `other` (right) into one ``PairCombiner`` run by `Rule`.
    func pairing<Other, Rule: PairingRule>(
        _ other: Signal<Other, Failure>,
        by rule: Rule.Type
    ) -> Signal<(Output, Other), Failure> where Rule.Left == Output, Rule.Right == Other {
        let left = self.body
        let right = other.body
        return Signal<(Output, Other), Failure>(unchecked: { observer, token in
            let combiner = PairCombiner<Rule, Failure>(downstream: observer, context: token.context)
            guard token.add(combiner) else { return }
            left(Observer { [combiner] event in combiner.receiveLeft(event) }, combiner.scope)
            right(Observer { [combiner] event in combiner.receiveRight(event) }, combiner.scope)
        })
    }
}

/// The state of one two-sided subscription (`zip`, `combineLatest`): the values `Rule` keeps,
/// which sides have finished, and the serialised output, under one lock. Both upstreams are
/// subscribed with `scope`.
///
/// - A value asks the rule for a pair; a value or a finished side then ends the result (and
///   cancels both upstreams) once the rule says no further pair can be sent.
/// - The first failure of either side fails the result once and cancels both upstreams.
///
/// Thread safety: all mutable state is behind a `Locked`; upstreams and the downstream run
/// outside it.
final class PairCombiner<Rule: PairingRule, Failure: Error>: Cancellable {
    typealias Output = (Rule.Left, Rule.Right)

    /// What a thread must do after a decision: deliver `event` (if `target` is set), cancel the
    /// upstreams if the result `ended`, and release what the rule `dropped` (after the lock).
    private typealias Step = (
        event: Event<Output, Failure>, target: Observer<Output, Failure>?, ended: Bool, dropped: Rule?
    )

    private struct State {
        var emitter: Emitter<Output, Failure>
        var rule = Rule()
        var leftFinished = false
        var rightFinished = false

        /// After a value: stores it through `keep` and emits the pair it completes, then the end
        /// if no pair is left possible. (A second accepted event is queued behind the first, so
        /// delivering the first delivers both.)
        mutating func receive(_ keep: (inout Rule) -> Output?) -> Step? {
            guard !emitter.isClosed else { return nil }
            guard let pair = keep(&rule) else { return checkEnd() }
            let event = Event<Output, Failure>.value(pair)
            let target = emitter.accept(event)
            // The end, if accepted, is queued behind the pair: delivering the pair delivers it.
            guard let end = checkEnd() else { return (event, target, false, nil) }
            return (event, target, true, end.dropped)
        }

        /// The end, if no further pair can be sent (the kept values are then dropped, and
        /// returned to be released after the lock).
        mutating func checkEnd() -> Step? {
            guard rule.isExhausted(leftFinished: leftFinished, rightFinished: rightFinished),
                  !emitter.isClosed else { return nil }
            defer { rule = Rule() }
            return (.finished, emitter.accept(.finished), true, rule)
        }
    }

    let scope: CancellationToken
    private let state: Locked<State>

    init(downstream: Observer<Output, Failure>, context: SubscriptionContext) {
        scope = CancellationToken(context: context)
        state = Locked(State(emitter: Emitter(downstream)))
    }

    func receiveLeft(_ event: Event<Rule.Left, Failure>) {
        receive(event, keep: { $0.pair(afterLeft: $1) }, finish: { $0.leftFinished = true })
    }

    func receiveRight(_ event: Event<Rule.Right, Failure>) {
        receive(event, keep: { $0.pair(afterRight: $1) }, finish: { $0.rightFinished = true })
    }

    /// Handles an event of one side: `keep` stores its values in the rule (returning the pair
    /// to send and the value it replaced), `finish` marks it finished.
    private func receive<Value>(
        _ event: Event<Value, Failure>,
        keep: (inout Rule, Value) -> (pair: Output?, replaced: Value?),
        finish: (inout State) -> Void
    ) {
        switch event {
        case .value(let value):
            // The replaced value is released after the lock: its `deinit` may send again.
            var replaced: Value?
            defer { withExtendedLifetime(replaced) {} }
            handle(state.withLock { state in
                state.receive { rule in
                    let kept = keep(&rule, value)
                    replaced = kept.replaced
                    return kept.pair
                }
            })
        case .finished:
            handle(state.withLock { state in
                finish(&state)
                return state.checkEnd()
            })
        case .failed(let error):
            fail(error)
        }
    }

    private func fail(_ error: Failure) {
        let event = Event<Output, Failure>.failed(error)
        let (target, leftovers) = state.withLock { state in
            defer { state.rule = Rule() }
            return (state.emitter.accept(event), state.rule)
        }
        handle((event, target, true, leftovers))
    }

    /// Cancels both upstreams once the result has ended, then delivers what this thread must.
    private func handle(_ step: Step?) {
        guard let step else { return }
        defer { withExtendedLifetime(step.dropped) {} }
        if step.ended { scope.cancel() }
        guard let target = step.target else { return }
        Emitter.deliver(step.event, to: target) { state.withLock { $0.emitter.next() } }
    }

    func cancel() {
        let released = state.withLock { state in
            defer { state.rule = Rule() }
            return (state.emitter.close(), state.rule)
        }
        scope.cancel()
        _ = released
    }
}
