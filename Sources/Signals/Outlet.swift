import Synchronization

/// The guard between a producer and its downstream: the one place the event contract is enforced.
///
/// - Calls from several threads are serialised without holding the lock while the downstream
///   runs: a thread that finds another one delivering queues its event, and the delivering thread
///   drains the queue before it returns.
/// - At most one terminal event gets through, and nothing after it.
/// - After `cancel()`, nothing is delivered; events already queued are dropped.
/// - The downstream observer and the teardown are released as soon as the subscription ends, so
///   a producer that keeps its observer does not keep the chain alive.
///
/// Thread safety: all state is behind one `Mutex`; this is why it may be shared freely.
final class Outlet<Output: Sendable, Failure: Error>: Cancellable {
    typealias Teardown = @Sendable () -> Void

    private struct State {
        var downstream: Observer<Output, Failure>?
        var emitting = false
        /// A terminal event was accepted (delivered or queued) or the outlet was cancelled.
        var completed = false
        /// The teardown has run or must run as soon as it is set.
        var disposed = false
        var queue: [Event<Output, Failure>] = []
        var teardown: Teardown?
    }

    private let state: Mutex<State>

    init(_ downstream: Observer<Output, Failure>) {
        state = Mutex(State(downstream: downstream))
    }

    /// The observer handed to the producer.
    var observer: Observer<Output, Failure> {
        Observer { [self] event in send(event) }
    }

    /// Stores the producer's teardown, or runs it at once if the subscription already ended.
    func setTeardown(_ teardown: (@Sendable () -> Void)?) {
        guard let teardown else { return }
        let runNow = state.withLock { state -> Bool in
            if state.disposed { return true }
            state.teardown = teardown
            return false
        }
        if runNow { teardown() }
    }

    func send(_ event: Event<Output, Failure>) {
        let isTerminal = event.isTerminal
        let first = state.withLock { state -> Observer<Output, Failure>? in
            guard !state.completed, let downstream = state.downstream else { return nil }
            if isTerminal { state.completed = true }
            if state.emitting {
                state.queue.append(event)
                return nil
            }
            state.emitting = true
            if isTerminal { state.downstream = nil }
            return downstream
        }
        guard var target = first else { return }
        var current = event
        while true {
            target.send(current)
            if current.isTerminal {
                dispose()
                return
            }
            let next = state.withLock { state -> (Event<Output, Failure>, Observer<Output, Failure>)? in
                guard !state.queue.isEmpty, let downstream = state.downstream else {
                    state.emitting = false
                    return nil
                }
                let event = state.queue.removeFirst()
                if event.isTerminal { state.downstream = nil }
                return (event, downstream)
            }
            guard let next else { return }
            (current, target) = next
        }
    }

    private func dispose() {
        let teardown = state.withLock { state -> Teardown? in
            state.disposed = true
            defer { state.teardown = nil }
            return state.teardown
        }
        teardown?()
    }

    func cancel() {
        // What the subscription held is taken out under the lock and released after it: a
        // `deinit` of something the observer or the events captured may run user code.
        let released = state.withLock { state -> (Teardown?, Observer<Output, Failure>?, [Event<Output, Failure>])? in
            guard !state.disposed else { return nil }
            state.completed = true
            state.disposed = true
            defer {
                state.downstream = nil
                state.queue = []
                state.teardown = nil
            }
            return (state.teardown, state.downstream, state.queue)
        }
        released?.0?()
    }
}
