import Synchronization

/// How many values the async bridge keeps while the consuming task is not waiting for one.
///
/// A signal pushes; an `AsyncSequence` is pulled. Values that arrive while the loop body is
/// still busy with the previous one wait in a buffer whose size this policy decides. A terminal
/// event is never dropped: it is delivered after the buffered values.
public enum SignalBufferingPolicy: Sendable, Equatable {
    /// Keep every value (the default). Memory grows if the producer outpaces the consumer.
    case unbounded
    /// Keep at most this many values; while the buffer is full, new values are dropped.
    case bufferingOldest(Int)
    /// Keep at most this many values; when the buffer is full, the oldest value is dropped to make
    /// room for the new one.
    case bufferingNewest(Int)
}

/// One subscription of a signal, read from async code one step at a time.
///
/// The subscription starts at the first call to ``next(isolation:)`` (unless the task is already
/// cancelled, in which case it never starts) and is cancelled when the task awaiting a step is
/// cancelled, when the channel is cancelled, or when the channel is released. A terminal event
/// releases the subscription at once.
///
/// Thread safety: all state is behind a `Locked`; continuations are resumed and the subscription is
/// started and cancelled outside the lock.
final class AsyncSignalChannel<Output: Sendable, Failure: Error>: Sendable {
    /// What one call to ``next(isolation:)`` produced.
    enum Step: Sendable {
        case value(Output)
        case finished
        case failed(Failure)
        /// The awaiting task (or the channel) was cancelled; the subscription is gone.
        case cancelled
    }

    private struct State {
        var started = false
        var token: CancellationToken?
        var buffer = FIFOBuffer<Output>()
        /// The upstream's terminal step, waiting behind the buffered values.
        var terminal: Step?
        var waiter: CheckedContinuation<Step, Never>?
        var cancelled = false
        /// The consumer has been given a terminal step; every later call gets `.finished`.
        var ended = false

        /// The step ready for the consumer, if any. Marks the end when it hands one out.
        mutating func takeReady() -> Step? {
            if ended { return .finished }
            if cancelled {
                ended = true
                return .cancelled
            }
            if let value = buffer.popFirst() { return .value(value) }
            if let terminal {
                self.terminal = nil
                ended = true
                return terminal
            }
            return nil
        }
    }

    private let signal: Signal<Output, Failure>
    private let policy: SignalBufferingPolicy
    /// Cancel the subscription as soon as one value arrives (``Signal/firstValue(isolation:)``).
    private let stopAfterFirstValue: Bool
    private let state = Locked(State())

    init(_ signal: Signal<Output, Failure>, policy: SignalBufferingPolicy, stopAfterFirstValue: Bool = false) {
        self.signal = signal
        self.policy = policy
        self.stopAfterFirstValue = stopAfterFirstValue
    }

    deinit {
        state.withLock { $0.token }?.cancel()
    }

    /// Waits for the next step. Returns `.cancelled` promptly when the awaiting task is (or gets)
    /// cancelled, and cancels the subscription.
    func next(isolation actor: isolated (any Actor)? = #isolation) async -> Step {
        if Task.isCancelled {
            cancel()
        } else {
            startIfNeeded()
        }
        return await withTaskCancellationHandler(
            operation: {
                await withCheckedContinuation(isolation: actor) { (continuation: CheckedContinuation<Step, Never>) in
                    let ready = state.withLock { state -> Step? in
                        if let step = state.takeReady() { return step }
                        precondition(state.waiter == nil, "A signal's async iterator was awaited from two tasks at once")
                        state.waiter = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            },
            onCancel: { [self] in cancel() },
            isolation: actor
        )
    }

    /// Cancels the subscription and drops buffered values; a waiting consumer gets `.cancelled`.
    /// Does nothing once the consumer has seen the end.
    func cancel() {
        // The buffered values are released after the lock: a value's `deinit` may send again.
        var dropped = (FIFOBuffer<Output>(), Step?.none)
        let (waiter, token) = state.withLock { state -> (CheckedContinuation<Step, Never>?, CancellationToken?) in
            guard !state.ended, !state.cancelled else { return (nil, nil) }
            state.cancelled = true
            dropped = (state.buffer, state.terminal)
            state.buffer = FIFOBuffer()
            state.terminal = nil
            let waiter = state.waiter
            state.waiter = nil
            if waiter != nil { state.ended = true }
            defer { state.token = nil }
            return (waiter, state.token)
        }
        token?.cancel()
        waiter?.resume(returning: .cancelled)
        withExtendedLifetime(dropped) {}
    }

    private func startIfNeeded() {
        let token = state.withLock { state -> CancellationToken? in
            guard !state.started else { return nil }
            state.started = true
            guard !state.cancelled else { return nil }
            let token = CancellationToken()
            state.token = token
            return token
        }
        guard let token else { return }
        signal.body(Observer { [weak self] event in self?.receive(event) }, token)
    }

    private func receive(_ event: Event<Output, Failure>) {
        let step: Step
        switch event {
        case .value(let value): step = .value(value)
        case .finished: step = .finished
        case .failed(let error): step = .failed(error)
        }
        let isTerminal = event.isTerminal || stopAfterFirstValue
        // A value the buffering policy drops is released after the lock.
        var evicted: Output?
        defer { withExtendedLifetime(evicted) {} }
        let (waiter, token) = state.withLock { state -> (CheckedContinuation<Step, Never>?, CancellationToken?) in
            guard !state.cancelled, !state.ended, state.terminal == nil else { return (nil, nil) }
            let waiter = state.waiter
            state.waiter = nil
            if isTerminal {
                if waiter == nil { state.terminal = step } else { state.ended = true }
                defer { state.token = nil }
                return (waiter, state.token)
            }
            if waiter == nil, case .value(let value) = step {
                evicted = state.buffer.append(value, policy: policy)
            }
            return (waiter, nil)
        }
        token?.cancel()
        waiter?.resume(returning: step)
    }
}

extension FIFOBuffer {
    /// Appends `element` as `policy` allows. Returns the element the policy dropped to make
    /// room, for the caller to release after its lock.
    fileprivate mutating func append(_ element: Element, policy: SignalBufferingPolicy) -> Element? {
        switch policy {
        case .unbounded:
            append(element)
        case .bufferingOldest(let limit):
            if count < limit { append(element) }
        case .bufferingNewest(let limit):
            guard limit > 0 else { return nil }
            let evicted = count >= limit ? popFirst() : nil
            append(element)
            return evicted
        }
        return nil
    }
}
