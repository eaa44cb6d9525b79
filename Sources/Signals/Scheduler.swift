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

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let scheduled = ScheduledAction(action)
        let nanoseconds = delay.clampedNanoseconds
        asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds))) { scheduled.run() }
        return scheduled
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
