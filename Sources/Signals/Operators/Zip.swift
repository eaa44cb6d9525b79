import Synchronization

extension Signal {
    /// Pairs the values of this signal and `other` in order: the first value of each, then the
    /// second of each, and so on.
    ///
    /// Guarantees:
    /// - Values that have no partner yet wait (without limit) for one.
    /// - Finishes as soon as no further pair is possible: when one signal has finished and none of
    ///   its values is left waiting. The other signal is then cancelled.
    /// - The first failure of either signal cancels the other and fails the result once.
    /// - Cancelling cancels both signals.
    /// - Pairs are delivered one at a time and in order, even when the two signals send on
    ///   different threads.
    public func zip<Other>(_ other: Signal<Other, Failure>) -> Signal<(Output, Other), Failure> {
        let left = self.body
        let right = other.body
        return Signal<(Output, Other), Failure>(unchecked: { observer, token in
            let state = ZipState<Output, Other, Failure>(downstream: observer)
            guard token.add(state) else { return }
            left(Observer { [state] event in state.receiveLeft(event) }, state.scope)
            right(Observer { [state] event in state.receiveRight(event) }, state.scope)
        })
    }
}

/// The state of one `zip` subscription: the values waiting for a partner, and the serialised
/// output, under one lock. Both upstreams are subscribed with `scope`.
///
/// Thread safety: all mutable state is behind a `Mutex`; upstreams and the downstream run
/// outside it.
final class ZipState<Left: Sendable, Right: Sendable, Failure: Error>: Cancellable {
    typealias Output = (Left, Right)

    /// What a thread must do after a decision: deliver `event` (if `target` is set), and cancel
    /// the upstreams if the result `ended`.
    private typealias Step = (event: Event<Output, Failure>, target: Observer<Output, Failure>?, ended: Bool)

    private struct State {
        var emitter: Emitter<Output, Failure>
        var left = ZipBuffer<Left>()
        var right = ZipBuffer<Right>()
        var leftFinished = false
        var rightFinished = false

        /// No further pair can be formed.
        var isExhausted: Bool {
            (leftFinished && left.isEmpty) || (rightFinished && right.isEmpty)
        }

        /// Emits the pair if both sides have a value waiting, then the end if no pair is left
        /// possible. (A second accepted event is queued behind the first, so delivering the first
        /// delivers both.)
        mutating func pairAndCheck() -> Step? {
            var step: Step?
            if !left.isEmpty && !right.isEmpty {
                let pair = Event<Output, Failure>.value((left.pop(), right.pop()))
                step = (pair, emitter.accept(pair), false)
            }
            if isExhausted && !emitter.isClosed {
                let target = emitter.accept(.finished)
                step = step.map { ($0.event, $0.target, true) } ?? (.finished, target, true)
                left = ZipBuffer()
                right = ZipBuffer()
            }
            return step
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
                state.left.push(value)
                return state.pairAndCheck()
            })
        case .finished:
            handle(state.withLock { state in
                state.leftFinished = true
                return state.pairAndCheck()
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
                state.right.push(value)
                return state.pairAndCheck()
            })
        case .finished:
            handle(state.withLock { state in
                state.rightFinished = true
                return state.pairAndCheck()
            })
        case .failed(let error):
            fail(error)
        }
    }

    private func fail(_ error: Failure) {
        let event = Event<Output, Failure>.failed(error)
        let (target, leftovers) = state.withLock { state in
            defer {
                state.left = ZipBuffer()
                state.right = ZipBuffer()
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
                state.left = ZipBuffer()
                state.right = ZipBuffer()
            }
            return (state.emitter.close(), state.left, state.right)
        }
        scope.cancel()
        _ = released
    }
}

/// A first-in, first-out queue for values waiting for a partner.
struct ZipBuffer<Element> {
    private var items: ContiguousArray<Element> = []
    private var head = 0

    init() {}

    var isEmpty: Bool { head == items.count }

    mutating func push(_ element: Element) {
        items.append(element)
    }

    /// Removes and returns the oldest element. The buffer must not be empty.
    mutating func pop() -> Element {
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 16)
            head = 0
        } else if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension ZipBuffer: Sendable where Element: Sendable {}
