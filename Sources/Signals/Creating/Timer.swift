import Synchronization

extension Signal where Output == Void, Failure == Never {
    /// A signal that waits `delay` on `scheduler`, then sends one `()` and finishes.
    ///
    /// Every subscription starts its own wait (the signal is cold), which makes it the building
    /// block of retry waits: `Signal.timer(after: .seconds(30), scheduler: scheduler).flatMap { … }`.
    /// Cancelling before the wait ends cancels the scheduled action; nothing is sent. Use
    /// ``setFailureType(to:)`` to compose it with signals that can fail.
    ///
    /// - Parameters:
    ///   - delay: how long to wait; zero or negative means "as soon as the scheduler runs it".
    ///   - scheduler: where and when the value is delivered.
    public static func timer(after delay: Duration, scheduler: some Scheduler) -> Signal<Void, Never> {
        let scheduler: any Scheduler = scheduler
        return Signal { observer in
            let action = scheduler.schedule(after: delay) {
                observer.send(())
                observer.finish()
            }
            return { action.cancel() }
        }
    }
}
