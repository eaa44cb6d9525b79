import Foundation
import Signals

/// Where a ``DiskCache`` reads the time: creation and last-use times and TTL expiry are wall-clock
/// instants, stored in the record files and compared across launches.
///
/// Tests use ``following(_:from:)`` with a `TestScheduler`, so a one-hour TTL expires when the
/// test advances virtual time by an hour.
public struct CacheClock: Sendable {
    /// Returns the current instant.
    let now: @Sendable () -> Date

    /// A clock that calls `now` for the time.
    public init(_ now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    /// The system's wall clock.
    public static let system = CacheClock { Date() }

    /// A clock that reads `origin` plus `scheduler`'s time (a `TestScheduler` starts at zero):
    /// the clock of tests in virtual time. Every clock made from one scheduler and origin reads
    /// the same instant, so several caches in one test agree.
    public static func following(_ scheduler: any Scheduler, from origin: Date) -> CacheClock {
        CacheClock { origin.addingTimeInterval(scheduler.now.timeInterval) }
    }

    /// The current time in whole milliseconds since 1970.
    var milliseconds: Int64 {
        Int64(clamping: Int64((now().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
