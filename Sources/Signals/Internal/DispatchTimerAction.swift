import Dispatch

/// An action that runs at most once, unless it is cancelled first; cancelling releases it.
///
/// Thread safety: the action is behind a ``Lock``, taken out before it runs or is released.
final class ScheduledAction: Cancellable, @unchecked Sendable {
    private let lock = Lock()
    @exclusivity(unchecked) private var action: (@Sendable () -> Void)?

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// Runs the action, unless it ran or was cancelled already.
    func run() {
        take()?()
    }

    func cancel() {
        // Released here, after the lock: what it captured may run user code in its `deinit`.
        _ = take()
    }

    private func take() -> (@Sendable () -> Void)? {
        var taken: (@Sendable () -> Void)?
        lock.withLock { swap(&taken, &action) }
        return taken
    }
}

/// A wait on a `DispatchQueue`: a timer source of its own that runs a ``ScheduledAction``.
/// Cancelling drops the action at once (what it captured is released on the cancelling thread)
/// and cancels the source, which takes it off the queue's timers at once.
///
/// The source's handler holds the timer and the scheduled action (not this token) until the
/// source fires or is cancelled: a cycle the source breaks when it lets its handler go. So
/// dropping the token without cancelling leaves the wait to run once, and cancelling releases
/// everything the queue held as soon as the queue has processed the cancellation.
///
/// Thread safety: immutable; `DispatchSourceTimer.cancel()` may be called from any thread, any
/// number of times, and the action is a ``ScheduledAction``.
final class DispatchTimerAction: Cancellable, @unchecked Sendable {
    // @unchecked: DispatchSourceTimer is thread-safe but not declared Sendable on every platform.
    private let timer: any DispatchSourceTimer
    /// The action the timer's handler runs (and holds while the timer is queued).
    let scheduled: ScheduledAction

    /// Arms a timer that runs `action` on `queue` after `delay`. `whenTimerReleased` (for
    /// tests) runs on `queue` once the source has let go of its handler after it was cancelled.
    init(
        _ action: @escaping @Sendable () -> Void,
        on queue: DispatchQueue,
        after delay: DispatchTimeInterval,
        whenTimerReleased: (@Sendable () -> Void)? = nil
    ) {
        let scheduled = ScheduledAction(action)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler {
            timer.cancel()
            scheduled.run()
        }
        if let whenTimerReleased { timer.setCancelHandler(handler: whenTimerReleased) }
        timer.schedule(deadline: .now() + delay)
        timer.activate()
        self.timer = timer
        self.scheduled = scheduled
    }

    func cancel() {
        scheduled.cancel()
        timer.cancel()
    }
}
