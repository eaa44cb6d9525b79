import Synchronization

extension Signal {
    /// Delivers every event on `scheduler`, in the order the upstream sent them.
    ///
    /// Events that arrive while a delivery is already scheduled join its queue, so a burst costs
    /// one scheduled action, and deliveries never overlap even on a concurrent scheduler.
    /// Cancelling drops the queued events and cancels the scheduled delivery: nothing is delivered
    /// after cancellation, even an event that was already scheduled. The upstream runs where it
    /// runs; only delivery moves.
    public func receive(on scheduler: some Scheduler) -> Signal<Output, Failure> {
        let body = self.body
        let scheduler: any Scheduler = scheduler
        return Signal(unchecked: { observer, token in
            let receiver = Receiver(Outlet(observer), scheduler: scheduler)
            guard token.add(receiver) else { return }
            body(Observer { event in receiver.receive(event) }, token)
        })
    }
}

/// The state of one `receive(on:)` subscription: the queued events and whether a delivery is
/// scheduled.
///
/// Thread safety: all state is behind a `Locked`; events go through an ``Outlet`` outside the lock.
private final class Receiver<Output: Sendable, Failure: Error>: Cancellable {
    private struct State {
        var queue = FIFOBuffer<Event<Output, Failure>>()
        var delivery: (any Cancellable)?
        /// A delivery is scheduled or running: new events only join the queue.
        var isScheduled = false
        var scheduleCount: UInt64 = 0
        var cancelled = false
    }

    private let outlet: Outlet<Output, Failure>
    private let scheduler: any Scheduler
    private let state = Locked(State())

    init(_ outlet: Outlet<Output, Failure>, scheduler: any Scheduler) {
        self.outlet = outlet
        self.scheduler = scheduler
    }

    func receive(_ event: Event<Output, Failure>) {
        let round = state.withLock { state -> UInt64? in
            guard !state.cancelled else { return nil }
            state.queue.append(event)
            guard !state.isScheduled else { return nil }
            state.isScheduled = true
            state.scheduleCount += 1
            return state.scheduleCount
        }
        guard let round else { return }
        let delivery = scheduler.schedule(after: .zero) { [weak self] in self?.drain() }
        let stale = state.withLock { state -> Bool in
            guard !state.cancelled, state.isScheduled, state.scheduleCount == round else { return true }
            state.delivery = delivery
            return false
        }
        if stale { delivery.cancel() }
    }

    /// Delivers queued events, oldest first, until the queue is empty.
    private func drain() {
        state.withLock { $0.delivery = nil }
        while true {
            let event = state.withLock { state -> Event<Output, Failure>? in
                guard !state.cancelled, let event = state.queue.popFirst() else {
                    state.isScheduled = false
                    return nil
                }
                return event
            }
            guard let event else { return }
            outlet.send(event)
        }
    }

    func cancel() {
        // The queued events are released after the lock: a value's `deinit` may send again.
        let (delivery, dropped) = state.withLock { state -> ((any Cancellable)?, FIFOBuffer<Event<Output, Failure>>) in
            state.cancelled = true
            defer {
                state.delivery = nil
                state.queue = FIFOBuffer()
            }
            return (state.delivery, state.queue)
        }
        delivery?.cancel()
        outlet.cancel()
        withExtendedLifetime(dropped) {}
    }
}
