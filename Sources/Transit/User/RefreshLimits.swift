import Signals

extension TokenStore {
    /// Bounds on refreshing: a deadline per refresh, and how many refreshes may start in a window.
    ///
    /// **The clock.** Limits hold lengths of time, not a clock: they are timed by the scheduler
    /// of whoever starts the refresh — the client's scheduler when the store is a client's
    /// ``HTTPClient/Configuration/authorizer``, the `scheduler:` argument of `retryWithFreshToken(from:scheduler:)`
    /// or ``TokenStore/freshToken(replacing:scheduler:)`` when it is used on its own. So a test
    /// that hands a `TestScheduler` to the client times the store's refreshes with it too.
    public struct RefreshLimits: Sendable {
        /// The longest a refresh may take; then it fails with ``RefreshError/timedOut``. Clamped
        /// like a request's deadline: a negative one is zero, and one longer than about 285
        /// years is that.
        public var deadline: Duration
        /// How many refreshes may start within ``window``; more fail with
        /// ``RefreshError/tooManyRefreshes``. At least 1.
        public var maxRefreshes: Int
        /// The window of ``maxRefreshes``.
        public var window: Duration

        /// Creates limits: 30 s per refresh, at most 5 refreshes a minute by default.
        public init(deadline: Duration = .seconds(30), maxRefreshes: Int = 5, window: Duration = .seconds(60)) {
            self.deadline = deadline
            self.maxRefreshes = max(1, maxRefreshes)
            self.window = window
        }

        /// Runs `action` when a refresh started now on `scheduler` passes its ``deadline``.
        func scheduleDeadline(on scheduler: any Scheduler, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
            // Clamped as a request's deadline is: never so long that the clock would overflow.
            scheduler.schedule(after: ScheduledSubscription.clamped(deadline), action)
        }
    }
}

/// When the recent refreshes of a store started: enforces ``TokenStore/RefreshLimits/maxRefreshes``
/// per ``TokenStore/RefreshLimits/window``.
///
/// Each start is recorded on the clock of the scheduler that started it. A start that lies in the
/// future of the clock asking now was recorded on another clock (a store used with two
/// schedulers): it is forgotten rather than counted for ever.
struct RefreshWindow: Sendable {
    private var starts: [Duration] = []

    /// Records a refresh starting at `now` and returns `true`, or returns `false` (recording
    /// nothing) when `limits` allow no more refreshes in the window.
    mutating func admit(at now: Duration, limits: TokenStore.RefreshLimits) -> Bool {
        starts.removeAll { now - $0 >= limits.window || $0 > now }
        guard starts.count < limits.maxRefreshes else { return false }
        starts.append(now)
        return true
    }
}
