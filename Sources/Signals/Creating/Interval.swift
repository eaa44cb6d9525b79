import Synchronization

extension Signal where Output == Int, Failure == Never {
    /// A signal that sends `0`, `1`, `2`, … every `period` on `scheduler`, and never finishes.
    ///
    /// The first value comes one `period` after subscribing. Ticks are scheduled against the
    /// subscription's start time (tick *n* is due at `start + n × period`), so a late scheduler
    /// does not make the ticks drift. Each subscription counts from zero. Cancelling cancels the
    /// next scheduled tick.
    ///
    /// A zero or negative `period` would tick without end in no time at all; such a signal finishes
    /// at once without sending a value. On ``ImmediateScheduler``, which ignores delays, ticks
    /// follow each other at once (without growing the stack) until the subscription is cancelled,
    /// so bound it downstream (`prefix(_:)`).
    ///
    /// - Parameters:
    ///   - period: the time between two ticks; must be positive.
    ///   - scheduler: where and when ticks are delivered; its clock measures the period.
    public static func interval(_ period: Duration, scheduler: some Scheduler) -> Signal<Int, Never> {
        let scheduler: any Scheduler = scheduler
        return Signal(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            guard period > .zero else {
                observer.finish()
                return
            }
            let ticker = Ticker(Outlet(observer), period: period, scheduler: scheduler)
            guard token.add(ticker) else { return }
            ticker.scheduleNext()
        })
    }
}

/// The state of one `interval` subscription: the tick count and the next scheduled tick.
///
/// Thread safety: all state is behind a `Locked`; ticks go through an ``Outlet`` outside the lock.
private final class Ticker: Cancellable {
    private struct State {
        var count = 0
        var next: (any Cancellable)?
        var scheduling = false
        var rescheduleRequested = false
        var cancelled = false
    }

    private let outlet: Outlet<Int, Never>
    private let period: Duration
    private let start: Duration
    private let scheduler: any Scheduler
    private let state = Locked(State())

    init(_ outlet: Outlet<Int, Never>, period: Duration, scheduler: any Scheduler) {
        self.outlet = outlet
        self.period = period
        self.scheduler = scheduler
        start = scheduler.now
    }

    /// Schedules the tick after the last one sent.
    ///
    /// Iterative rather than recursive: a tick that runs synchronously inside `schedule` (or on
    /// another thread before this call returns) only asks this loop to schedule again, so a
    /// scheduler that runs actions at once cannot grow the stack.
    func scheduleNext() {
        let enter = state.withLock { state -> Bool in
            if state.scheduling {
                state.rescheduleRequested = true
                return false
            }
            state.scheduling = true
            return true
        }
        guard enter else { return }
        while true {
            let due = state.withLock { state -> Duration? in
                state.rescheduleRequested = false
                guard !state.cancelled else {
                    state.scheduling = false
                    return nil
                }
                return start + period * (state.count + 1)
            }
            guard let due else { return }
            let next = scheduler.schedule(after: due - scheduler.now) { [weak self] in self?.tick() }
            let (stale, again) = state.withLock { state -> (Bool, Bool) in
                let again = state.rescheduleRequested && !state.cancelled
                if !again { state.scheduling = false }
                if state.cancelled { return (true, false) }
                state.next = next
                return (false, again)
            }
            if stale { next.cancel() }
            if !again { return }
        }
    }

    private func tick() {
        let index = state.withLock { state -> Int? in
            guard !state.cancelled else { return nil }
            state.next = nil
            defer { state.count += 1 }
            return state.count
        }
        guard let index else { return }
        outlet.send(.value(index))
        scheduleNext()
    }

    func cancel() {
        let next = state.withLock { state -> (any Cancellable)? in
            state.cancelled = true
            defer { state.next = nil }
            return state.next
        }
        next?.cancel()
        outlet.cancel()
    }
}
