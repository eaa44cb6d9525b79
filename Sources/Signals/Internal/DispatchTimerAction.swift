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

/// An action run by a timer source of its own on a `DispatchQueue`: cancelling it cancels the
/// source, which takes it off the queue's timers at once.
///
/// The source's handler holds this object until the source fires or is cancelled (a cycle the
/// source breaks when it lets its handler go), so the queue keeps it exactly as long as it keeps
/// the timer.
///
/// Thread safety: the action and the source are behind a ``Lock``, taken out before the action
/// runs or is released, and before the source is cancelled.
final class DispatchTimerAction: Cancellable, @unchecked Sendable {
    private let lock = Lock()
    @exclusivity(unchecked) private var action: (@Sendable () -> Void)?
    @exclusivity(unchecked) private var source: (any DispatchSourceTimer)?

    /// Arms a timer that runs `action` on `queue` after `delay`. `whenTimerReleased` (for
    /// tests) runs on `queue` once the source has let go of its handler after it was cancelled.
    init(
        _ action: @escaping @Sendable () -> Void,
        on queue: DispatchQueue,
        after delay: DispatchTimeInterval,
        whenTimerReleased: (@Sendable () -> Void)? = nil
    ) {
        self.action = action
        let timer = DispatchSource.makeTimerSource(queue: queue)
        source = timer
        timer.setEventHandler { [self] in run() }
        if let whenTimerReleased { timer.setCancelHandler(handler: whenTimerReleased) }
        timer.schedule(deadline: .now() + delay)
        timer.activate()
    }

    private func run() {
        let (action, source) = take()
        source?.cancel()
        action?()
    }

    func cancel() {
        let (action, source) = take()
        source?.cancel()
        // Released here, after the lock.
        withExtendedLifetime(action) {}
    }

    private func take() -> ((@Sendable () -> Void)?, (any DispatchSourceTimer)?) {
        var takenAction: (@Sendable () -> Void)?
        var takenSource: (any DispatchSourceTimer)?
        lock.withLock {
            swap(&takenAction, &action)
            swap(&takenSource, &source)
        }
        return (takenAction, takenSource)
    }
}
