/// The state of one subscription of a time-based operator (`delay`, `debounce`): it receives
/// every upstream event and sends its own later, through its ``TimedOutlet``, from the scheduler.
///
/// A stage is registered with the subscriber's token before the upstream is subscribed, so
/// cancelling the token cancels the stage; `cancel()` must cancel what the stage scheduled and
/// its outlet.
protocol ScheduledStage<Output, Failure>: Cancellable {
    associatedtype Output: Sendable
    associatedtype Failure: Error

    /// A stage that sends through `output`.
    init(_ output: TimedOutlet<Output, Failure>)

    /// Takes one event from the upstream.
    func receive(_ event: Event<Output, Failure>)
}

/// Where a ``ScheduledStage`` sends its events (an ``Outlet``, which serialises them and drops
/// what comes after a terminal event or cancellation), how long it waits and on which scheduler.
struct TimedOutlet<Output: Sendable, Failure: Error>: Sendable {
    let outlet: Outlet<Output, Failure>
    let interval: Duration
    let scheduler: any Scheduler
}

extension Signal {
    /// Runs every subscription of this signal through a new `Stage` that waits `interval` on
    /// `scheduler`. The upstream is subscribed with the subscriber's own token.
    func scheduled<Stage: ScheduledStage>(
        through stage: Stage.Type,
        interval: Duration,
        scheduler: any Scheduler
    ) -> Signal<Output, Failure> where Stage.Output == Output, Stage.Failure == Failure {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let stage = Stage(TimedOutlet(outlet: Outlet(observer), interval: interval, scheduler: scheduler))
            guard token.add(stage) else { return }
            body(Observer { event in stage.receive(event) }, token)
        })
    }
}
