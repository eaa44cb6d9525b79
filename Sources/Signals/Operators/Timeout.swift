import Synchronization

/// The failure of ``Signal/timeout(_:scheduler:)`` on a signal whose failure type is `any Error`: the
/// upstream sent no event within `interval`.
public struct TimeoutError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The interval that elapsed without an event.
    public let interval: Duration

    /// Creates a timeout error for `interval`.
    public init(interval: Duration) {
        self.interval = interval
    }

    /// Says how long the signal stayed silent.
    public var description: String {
        "The signal sent no event within \(interval); its subscription was cancelled."
    }
}

extension Signal {
    /// Ends the subscription if the upstream sends no event within `interval`.
    ///
    /// The clock starts when the subscription starts and restarts on every value, as in Combine.
    /// If it runs out, the upstream is cancelled and the signal fails with `customError()`, or
    /// **finishes** when `customError` is `nil` (Combine's behaviour). On a signal whose failure
    /// type is `any Error`, the overload without `customError` fails with ``TimeoutError`` instead.
    ///
    /// Values and the upstream's own terminal event pass through at once, on the upstream's thread
    /// (Combine re-delivers them on the scheduler; this operator does not); only the timeout's
    /// terminal event is delivered on `scheduler`. A terminal event from the upstream stops the
    /// clock. Cancelling cancels the pending timer and the upstream.
    ///
    /// - Parameters:
    ///   - interval: the longest wait for the first value, between values, and for completion.
    ///   - scheduler: the scheduler that measures the interval.
    ///   - customError: builds the failure sent on timeout; `nil` finishes instead.
    public func timeout(
        _ interval: Duration,
        scheduler: some Scheduler,
        customError: (@Sendable () -> Failure)? = nil
    ) -> Signal<Output, Failure> {
        let body = self.body
        let scheduler: any Scheduler = scheduler
        return Signal(unchecked: { observer, token in
            let upstream = token.makeChild()
            let timer = Timeouter(
                Outlet(observer), upstream: upstream, interval: interval, scheduler: scheduler, customError: customError
            )
            guard token.add(timer) else { return }
            timer.arm()
            body(Observer { event in timer.receive(event) }, upstream)
        })
    }
}

extension Signal where Failure == any Error {
    /// Ends the subscription with a ``TimeoutError`` if the upstream sends no event within
    /// `interval`.
    ///
    /// The clock starts when the subscription starts and restarts on every value. When it runs
    /// out, the upstream is cancelled and the signal fails with `TimeoutError(interval:)`. See
    /// ``Signal/timeout(_:scheduler:customError:)`` for delivery and cancellation; pass
    /// `customError: nil` there to finish instead of failing.
    public func timeout(_ interval: Duration, scheduler: some Scheduler) -> Signal<Output, any Error> {
        timeout(interval, scheduler: scheduler, customError: { TimeoutError(interval: interval) })
    }
}

/// The state of one `timeout` subscription: the running timer and whether the subscription ended.
///
/// Each timer carries a generation; a timer whose generation is no longer current (a value arrived
/// meanwhile) does nothing when it fires.
///
/// Thread safety: all state is behind a `Locked`; events go through an ``Outlet`` outside the lock.
private final class Timeouter<Output: Sendable, Failure: Error>: Cancellable {
    private struct State {
        var generation: UInt64 = 0
        var timer: (any Cancellable)?
        var ended = false
    }

    private let outlet: Outlet<Output, Failure>
    private let upstream: CancellationToken
    private let interval: Duration
    private let scheduler: any Scheduler
    private let customError: (@Sendable () -> Failure)?
    private let state = Locked(State())

    init(
        _ outlet: Outlet<Output, Failure>,
        upstream: CancellationToken,
        interval: Duration,
        scheduler: any Scheduler,
        customError: (@Sendable () -> Failure)?
    ) {
        self.outlet = outlet
        self.upstream = upstream
        self.interval = interval
        self.scheduler = scheduler
        self.customError = customError
    }

    /// Starts (or restarts) the clock, cancelling the previous timer.
    func arm() {
        let armed = state.withLock { state -> (UInt64, (any Cancellable)?)? in
            guard !state.ended else { return nil }
            state.generation += 1
            defer { state.timer = nil }
            return (state.generation, state.timer)
        }
        guard let (generation, previous) = armed else { return }
        previous?.cancel()
        let timer = scheduler.schedule(after: interval) { [weak self] in self?.fire(generation) }
        let stale = state.withLock { state -> Bool in
            guard !state.ended, state.generation == generation else { return true }
            state.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    func receive(_ event: Event<Output, Failure>) {
        if case .value = event {
            guard !state.withLock({ $0.ended }) else { return }
            arm()
            outlet.send(event)
            return
        }
        guard let timer = end() else { return }
        timer?.cancel()
        outlet.send(event)
        upstream.cancel()
    }

    private func fire(_ generation: UInt64) {
        let current = state.withLock { state -> Bool in
            guard !state.ended, state.generation == generation else { return false }
            state.ended = true
            state.timer = nil
            return true
        }
        guard current else { return }
        upstream.cancel()
        if let customError {
            outlet.send(.failed(customError()))
        } else {
            outlet.send(.finished)
        }
    }

    /// Marks the subscription ended; returns the running timer, or `nil` if it had already ended.
    private func end() -> (any Cancellable)?? {
        state.withLock { state -> (any Cancellable)?? in
            guard !state.ended else { return nil }
            state.ended = true
            defer { state.timer = nil }
            return .some(state.timer)
        }
    }

    func cancel() {
        if let timer = end() { timer?.cancel() }
        upstream.cancel()
        outlet.cancel()
    }
}
