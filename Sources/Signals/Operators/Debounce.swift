import Synchronization

extension Signal {
    /// Sends a value only once `interval` has passed without another value (Combine's
    /// `debounce`).
    ///
    /// Every value restarts the wait and replaces the one waiting; the value that survives a
    /// full, quiet `interval` is delivered on `scheduler`.
    ///
    /// Like Combine, when the upstream finishes or fails, the value still waiting is **dropped**
    /// and the terminal event is delivered on `scheduler` as soon as it runs. (Add a value-flushing
    /// step upstream if the last value must survive.) Cancelling cancels the waiting timer and the
    /// upstream; nothing is delivered afterwards.
    ///
    /// - Parameters:
    ///   - interval: the quiet time a value must survive before it is sent.
    ///   - scheduler: where and when values and the terminal event are delivered.
    public func debounce(for interval: Duration, scheduler: some Scheduler) -> Signal<Output, Failure> {
        scheduled(through: Debouncer.self, interval: interval, scheduler: scheduler)
    }
}

/// The state of one `debounce` subscription: the waiting value and its timer.
///
/// Each timer carries a generation; only the timer of the latest value delivers it.
///
/// Thread safety: all state is behind a `Locked`; events go through an ``Outlet`` outside the lock.
private final class Debouncer<Output: Sendable, Failure: Error>: ScheduledStage {
    private struct State {
        var generation: UInt64 = 0
        var pending: Output?
        var timer: (any Cancellable)?
        var ended = false

        /// Starts a new generation in which `value` (if any) waits, and the result has ended if
        /// `ending`. Returns the new generation and what the previous one held: its timer, to
        /// cancel, and its value, to release after the lock.
        mutating func advance(waiting value: Output?, ending: Bool) -> Generation {
            if ending { ended = true }
            generation += 1
            defer {
                timer = nil
                pending = value
            }
            return Generation(number: generation, previousTimer: timer, replaced: pending)
        }
    }

    /// A new generation, and what the previous one left to cancel and release.
    private struct Generation {
        let number: UInt64
        let previousTimer: (any Cancellable)?
        let replaced: Output?
    }

    private let output: TimedOutlet<Output, Failure>
    private let state = Locked(State())

    init(_ output: TimedOutlet<Output, Failure>) {
        self.output = output
    }

    func receive(_ event: Event<Output, Failure>) {
        switch event {
        case .value(let value):
            // The replaced value is released at the end of this scope, after the lock.
            guard let armed = state.withLock({ $0.ended ? nil : $0.advance(waiting: value, ending: false) }) else {
                return
            }
            let generation = armed.number
            armed.previousTimer?.cancel()
            schedule(after: output.interval, generation: generation) { [weak self] in self?.fire(generation) }
        case .finished, .failed:
            guard let armed = state.withLock({ $0.ended ? nil : $0.advance(waiting: nil, ending: true) }) else {
                return
            }
            let generation = armed.number
            armed.previousTimer?.cancel()
            schedule(after: .zero, generation: generation) { [weak self] in
                self?.complete(event, generation: generation)
            }
        }
    }

    /// Schedules `action` and keeps its cancellable while `generation` is current.
    private func schedule(after delay: Duration, generation: UInt64, _ action: @escaping @Sendable () -> Void) {
        let timer = output.scheduler.schedule(after: delay, action)
        let stale = state.withLock { state -> Bool in
            guard state.generation == generation else { return true }
            state.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    private func fire(_ generation: UInt64) {
        let value = state.withLock { state -> Output? in
            guard !state.ended, state.generation == generation else { return nil }
            state.timer = nil
            defer { state.pending = nil }
            return state.pending
        }
        if let value { output.outlet.send(.value(value)) }
    }

    private func complete(_ event: Event<Output, Failure>, generation: UInt64) {
        let current = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.timer = nil
            return true
        }
        if current { output.outlet.send(event) }
    }

    func cancel() {
        // The waiting value is released at the end of this scope, after the lock.
        let ended = state.withLock { $0.advance(waiting: nil, ending: true) }
        ended.previousTimer?.cancel()
        output.outlet.cancel()
    }
}
