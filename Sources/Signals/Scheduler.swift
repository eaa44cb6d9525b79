import Dispatch
import Synchronization

/// Where and when work runs. Every time-based operator takes one, so tests can run in virtual
/// time with ``TestScheduler``.
public protocol Scheduler: Sendable {
    /// The scheduler's current time, measured from an arbitrary origin. Monotonic.
    var now: Duration { get }

    /// Runs `action` as soon as possible.
    func schedule(_ action: @escaping @Sendable () -> Void)

    /// Runs `action` after `delay` (at once for a zero or negative delay).
    ///
    /// - Returns: a cancellable that prevents the action from running if it has not started.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable
}

/// A scheduler that runs everything at once, on the calling thread, ignoring delays.
///
/// Useful where an API asks for a scheduler and the work should simply happen now.
public struct ImmediateScheduler: Scheduler {
    /// Creates an immediate scheduler.
    public init() {}

    /// The shared immediate scheduler.
    public static let shared = ImmediateScheduler()

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    public func schedule(_ action: @escaping @Sendable () -> Void) {
        action()
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        action()
        return ActionCancellable {}
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`; negative durations give zero.
    @usableFromInline
    var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return max(0, whole &+ attoseconds / 1_000_000_000)
    }

    /// The duration in seconds, as a `Double`.
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension DispatchQueue: Scheduler {
    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    public func schedule(_ action: @escaping @Sendable () -> Void) {
        async(execute: action)
    }

    /// Runs `action` on this queue after `delay`.
    ///
    /// A positive delay arms a timer source of its own, so cancelling takes the timer off the
    /// queue at once: a cancelled action (and what it captured) is released when it is cancelled,
    /// not at its deadline. (`asyncAfter` cannot do this: its blocks stay queued until they are
    /// due, which is why `timeout(.seconds(3600))` over a million values would hold a million
    /// cancelled blocks for an hour.)
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let nanoseconds = delay.clampedNanoseconds
        guard nanoseconds > 0 else {
            let scheduled = ScheduledAction(action)
            async { scheduled.run() }
            return scheduled
        }
        return DispatchTimerAction(action, on: self, after: .nanoseconds(Int(clamping: nanoseconds)))
    }
}

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
