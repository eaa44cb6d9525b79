import Synchronization

extension Signal {
    /// Sends at most one value per `interval` (Combine's `throttle`).
    ///
    /// - The first value is sent as soon as `scheduler` runs.
    /// - A value that arrives while nothing is waiting is sent at the later of "now" and "`interval`
    ///   after the last value sent"; while it waits, later values are dropped (`latest: false`,
    ///   the first value of the window wins) or replace it (`latest: true`, the most recent wins).
    /// - A terminal event is delivered right after the value still waiting (at that value's time),
    ///   or as soon as `scheduler` runs if nothing waits; it never drops a waiting value.
    ///
    /// Everything is delivered on `scheduler`. Cancelling cancels the waiting action and the
    /// upstream; nothing is delivered afterwards.
    ///
    /// - Parameters:
    ///   - interval: the minimum time between two values sent.
    ///   - scheduler: where and when values are delivered; its clock measures the interval.
    ///   - latest: `true` to send the most recent value of each window, `false` for the first.
    public func throttle(
        for interval: Duration,
        scheduler: some Scheduler,
        latest: Bool
    ) -> Signal<Output, Failure> {
        let body = self.body
        let scheduler: any Scheduler = scheduler
        return Signal(unchecked: { observer, token in
            let throttler = Throttler(Outlet(observer), interval: interval, scheduler: scheduler, latest: latest)
            guard token.add(throttler) else { return }
            body(Observer { event in throttler.receive(event) }, token)
        })
    }
}

/// The state of one `throttle` subscription: the value (and terminal event) waiting to be sent,
/// the time the last value was sent, and the scheduled emission.
///
/// Thread safety: all state is behind a `Locked`; events go through an ``Outlet`` outside the lock.
private final class Throttler<Output: Sendable, Failure: Error>: Cancellable {
    private struct State {
        var pendingValue: Output?
        var pendingCompletion: Event<Output, Failure>?
        var lastEmission: Duration?
        var emission: (any Cancellable)?
        /// An emission is scheduled (its cancellable may not be stored yet).
        var isScheduled = false
        var upstreamEnded = false
        var cancelled = false
    }

    private let outlet: Outlet<Output, Failure>
    private let interval: Duration
    private let scheduler: any Scheduler
    private let latest: Bool
    private let state = Locked(State())

    init(_ outlet: Outlet<Output, Failure>, interval: Duration, scheduler: any Scheduler, latest: Bool) {
        self.outlet = outlet
        self.interval = interval
        self.scheduler = scheduler
        self.latest = latest
    }

    func receive(_ event: Event<Output, Failure>) {
        let now = scheduler.now
        // A value `latest` replaces is released after the lock: its `deinit` may send again.
        var replaced: Output?
        defer { withExtendedLifetime(replaced) {} }
        let delay = state.withLock { state -> Duration? in
            guard !state.cancelled, !state.upstreamEnded else { return nil }
            if case .value(let value) = event {
                if state.isScheduled {
                    if latest {
                        replaced = state.pendingValue
                        state.pendingValue = value
                    }
                    return nil
                }
                state.pendingValue = value
                state.isScheduled = true
                let earliest = state.lastEmission.map { $0 + interval } ?? now
                return max(earliest, now) - now
            }
            state.upstreamEnded = true
            state.pendingCompletion = event
            if state.isScheduled { return nil }
            state.isScheduled = true
            return .zero
        }
        guard let delay else { return }
        let emission = scheduler.schedule(after: delay) { [weak self] in self?.emit() }
        let stale = state.withLock { state -> Bool in
            guard !state.cancelled, state.isScheduled else { return true }
            state.emission = emission
            return false
        }
        if stale { emission.cancel() }
    }

    private func emit() {
        let now = scheduler.now
        let (value, completion) = state.withLock { state -> (Output?, Event<Output, Failure>?) in
            guard !state.cancelled else { return (nil, nil) }
            state.isScheduled = false
            state.emission = nil
            if state.pendingValue != nil { state.lastEmission = now }
            defer {
                state.pendingValue = nil
                state.pendingCompletion = nil
            }
            return (state.pendingValue, state.pendingCompletion)
        }
        if let value { outlet.send(.value(value)) }
        if let completion { outlet.send(completion) }
    }

    func cancel() {
        // What waited is released after the lock: a value's `deinit` may send again.
        let (emission, dropped) = state.withLock { state -> ((any Cancellable)?, (Output?, Event<Output, Failure>?)) in
            state.cancelled = true
            defer {
                state.emission = nil
                state.pendingValue = nil
                state.pendingCompletion = nil
            }
            return (state.emission, (state.pendingValue, state.pendingCompletion))
        }
        emission?.cancel()
        outlet.cancel()
        withExtendedLifetime(dropped) {}
    }
}
