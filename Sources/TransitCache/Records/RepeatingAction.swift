import Signals

/// Runs an action every `interval` on a scheduler until cancelled: the timer of scheduled
/// garbage collection. The next run is scheduled after the current one returns, so runs never
/// overlap.
///
/// Thread safety: the pending run and the cancelled flag are behind a `Mutex`.
final class RepeatingAction: Cancellable {
    private struct State {
        var pending: (any Cancellable)?
        var cancelled = false
    }

    private let interval: Duration
    private let scheduler: any Scheduler
    private let action: @Sendable () -> Void
    private let state = Mutex(State())

    init(interval: Duration, scheduler: any Scheduler, action: @escaping @Sendable () -> Void) {
        self.interval = max(interval, .milliseconds(1))
        self.scheduler = scheduler
        self.action = action
    }

    /// Schedules the first run.
    func start() {
        scheduleNext()
    }

    func cancel() {
        let pending = state.withLock { state -> (any Cancellable)? in
            state.cancelled = true
            defer { state.pending = nil }
            return state.pending
        }
        pending?.cancel()
    }

    private func scheduleNext() {
        guard !state.withLock({ $0.cancelled }) else { return }
        let pending = scheduler.schedule(after: interval) { [weak self] in
            guard let self, !self.state.withLock({ $0.cancelled }) else { return }
            self.action()
            self.scheduleNext()
        }
        let cancelledMeanwhile = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.pending = pending
            return false
        }
        if cancelledMeanwhile { pending.cancel() }
    }
}
