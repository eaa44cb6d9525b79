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

    /// Runs `action` on this queue after `delay`, unless the returned token is cancelled first.
    ///
    /// The wait is a dispatch timer source, so cancelling removes it from the queue's timers at
    /// once. (`asyncAfter` cannot be withdrawn: a cancelled wait would stay queued, with its
    /// closure, until its time came — a 300-second request deadline cancelled after a
    /// millisecond would hold memory for 300 seconds, thousands of them under load.)
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let scheduled = ScheduledAction(action)
        let nanoseconds = delay.clampedNanoseconds
        let timer = DispatchSource.makeTimerSource(queue: self)
        timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)))
        // The handler holds the timer until it fires or is cancelled; cancelling a dispatch
        // source releases its handler, which ends that cycle.
        timer.setEventHandler {
            timer.cancel()
            scheduled.run()
        }
        timer.resume()
        return DispatchTimerAction(timer: timer, action: scheduled)
    }
}

/// A pending ``DispatchQueue`` wait: cancelling drops the action and cancels the timer source.
///
/// Thread safety: `DispatchSourceTimer.cancel()` may be called from any thread, any number of
/// times; the action is a ``ScheduledAction``.
private final class DispatchTimerAction: Cancellable, @unchecked Sendable {
    // @unchecked: DispatchSourceTimer is thread-safe but not declared Sendable on every platform.
    private let timer: any DispatchSourceTimer
    private let action: ScheduledAction

    init(timer: any DispatchSourceTimer, action: ScheduledAction) {
        self.timer = timer
        self.action = action
    }

    func cancel() {
        action.cancel()
        timer.cancel()
    }
}

/// An action that runs at most once, unless it is cancelled first; cancelling releases it.
///
/// Thread safety: the action is behind a `Mutex` and is taken out before it runs.
final class ScheduledAction: Cancellable {
    private let action: Mutex<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    func run() {
        let action = self.action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    func cancel() {
        action.withLock { $0 = nil }
    }
}
