import Dispatch
import Synchronization

/// Where and when work runs. Every time-based operator takes one, so tests can run in virtual
/// time with ``TestScheduler``.
public protocol Scheduler: Sendable {
    /// The scheduler's current time, measured from an arbitrary origin. Monotonic.
    var now: Duration { get }

    /// Runs `action` as soon as possible. A scheduler that has nothing cheaper than
    /// `schedule(after: .zero, action)` need not implement it: that is what it does by default.
    func schedule(_ action: @escaping @Sendable () -> Void)

    /// Runs `action` after `delay` (at once for a zero or negative delay).
    ///
    /// - Returns: a cancellable that prevents the action from running if it has not started.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable
}

extension Scheduler {
    /// Runs `action` as soon as possible: `schedule(after: .zero, action)`.
    public func schedule(_ action: @escaping @Sendable () -> Void) {
        schedule(after: .zero, action)
    }
}

/// A scheduler that runs everything at once, on the calling thread, ignoring delays.
///
/// Useful where an API asks for a scheduler and the work should simply happen now.
public struct ImmediateScheduler: Scheduler {
    /// Creates an immediate scheduler.
    public init() {}

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
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
    package var timeInterval: Double {
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
