import Synchronization

extension Signal {
    /// Delivers every event `interval` later, on `scheduler`.
    ///
    /// Values, `finished` **and failures** are all delayed by `interval`, as Combine's `delay`
    /// does: a failure never overtakes a value that arrived before it, and every event reaches the
    /// downstream in the order the upstream sent it, on the scheduler. The subscription to the
    /// upstream itself is not delayed.
    ///
    /// Cancelling cancels every event still waiting on the scheduler (nothing is delivered after
    /// cancellation, and the scheduled actions are released) and cancels the upstream.
    ///
    /// - Parameters:
    ///   - interval: how long each event waits; zero or negative means "as soon as the scheduler
    ///     runs it".
    ///   - scheduler: where and when events are delivered (a ``TestScheduler`` in tests).
    public func delay(for interval: Duration, scheduler: some Scheduler) -> Signal<Output, Failure> {
        scheduled(through: Delayer.self, interval: interval, scheduler: scheduler)
    }
}

/// The state of one `delay` subscription: the events waiting to be delivered, and the scheduled
/// actions that will deliver them.
///
/// Each scheduled action delivers the *oldest* waiting event, so events come out in order even on
/// a scheduler that may run actions out of order.
///
/// Thread safety: all state is behind a `Locked`; events are delivered through an ``Outlet``
/// outside the lock.
private final class Delayer<Output: Sendable, Failure: Error>: ScheduledStage {
    private struct State {
        var queue = FIFOBuffer<Event<Output, Failure>>()
        var scheduled: [UInt64: any Cancellable] = [:]
        /// Actions that ran before their cancellable was stored (a synchronous scheduler).
        var ranEarly: Set<UInt64> = []
        var nextID: UInt64 = 0
        var cancelled = false
    }

    private let output: TimedOutlet<Output, Failure>
    private let state = Locked(State())

    init(_ output: TimedOutlet<Output, Failure>) {
        self.output = output
    }

    func receive(_ event: Event<Output, Failure>) {
        let id = state.withLock { state -> UInt64? in
            guard !state.cancelled else { return nil }
            state.queue.append(event)
            defer { state.nextID += 1 }
            return state.nextID
        }
        guard let id else { return }
        let action = output.scheduler.schedule(after: output.interval) { [weak self] in self?.fire(id) }
        let stale = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if state.ranEarly.remove(id) == nil { state.scheduled[id] = action }
            return false
        }
        if stale { action.cancel() }
    }

    private func fire(_ id: UInt64) {
        let event = state.withLock { state -> Event<Output, Failure>? in
            if state.scheduled.removeValue(forKey: id) == nil { state.ranEarly.insert(id) }
            guard !state.cancelled else { return nil }
            return state.queue.popFirst()
        }
        if let event { output.outlet.send(event) }
    }

    func cancel() {
        // The waiting events are released after the lock: a value's `deinit` may send again.
        let (scheduled, dropped) = state.withLock { state -> ([UInt64: any Cancellable], FIFOBuffer<Event<Output, Failure>>) in
            state.cancelled = true
            state.ranEarly = []
            defer {
                state.scheduled = [:]
                state.queue = FIFOBuffer()
            }
            return (state.scheduled, state.queue)
        }
        for action in scheduled.values { action.cancel() }
        output.outlet.cancel()
        withExtendedLifetime(dropped) {}
    }
}
