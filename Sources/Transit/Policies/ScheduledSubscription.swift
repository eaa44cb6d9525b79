import Foundation
import Signals

/// Subscribing to a signal later, on a scheduler: the wait of the retrying operators.
enum ScheduledSubscription {
    /// The longest wait, in seconds (about 285 years): longer values are clamped so that the
    /// conversion to `Duration` and to dispatch time cannot overflow.
    static let longestWait: TimeInterval = 9e9

    /// `seconds` as a `Duration`; negative and NaN give zero, huge values ``longestWait``.
    static func duration(seconds: TimeInterval) -> Duration {
        guard seconds > 0 else { return .zero }
        return .seconds(min(seconds, longestWait))
    }

    /// `duration` clamped to `0...longestWait`.
    static func clamped(_ duration: Duration) -> Duration {
        min(max(duration, .zero), longest)
    }

    /// ``longestWait`` as a `Duration`.
    static let longest: Duration = .seconds(longestWait)

    /// `duration` in seconds, clamped to `0...longestWait`: safe to multiply, never a trap.
    static func seconds(_ duration: Duration) -> TimeInterval {
        clamped(duration).timeInterval
    }

    /// A signal that subscribes to `next` once `seconds` have passed on `scheduler`.
    ///
    /// Cancelling before then cancels the scheduled action (nothing stays pending on the
    /// scheduler) and `next` is never subscribed. `next` is subscribed with the subscription's
    /// context.
    static func signal<Output, Failure>(
        _ next: Signal<Output, Failure>,
        after seconds: TimeInterval,
        on scheduler: some Scheduler
    ) -> Signal<Output, Failure> {
        let delay = duration(seconds: seconds)
        return Signal(subscribing: { observer, context in
            let scope = CancellationToken(context: context)
            let scheduled = scheduler.schedule(after: delay) {
                next.observe(observer, in: scope)
            }
            return {
                scheduled.cancel()
                scope.cancel()
            }
        })
    }
}
