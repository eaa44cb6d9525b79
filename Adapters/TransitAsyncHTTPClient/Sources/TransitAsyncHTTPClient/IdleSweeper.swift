import NIOConcurrencyHelpers
import NIOCore

/// Enforces `URLRequest.timeoutInterval` (the longest silence an exchange may have) for every
/// exchange of one transport with **one** repeating check, instead of a timer per request.
///
/// A timer per request costs NIO's `scheduleTask` and its cancellation (a task object, a promise, a
/// heap insertion and removal; BENCHMARKS.md, "Where the adapter chain's instructions go"), a few
/// percent of a loopback request. Here an exchange only registers (a lock and a dictionary insertion) and
/// unregisters. While any exchange is registered, a repeating task on one event loop looks at each
/// one and expires those silent for their timeout; it stops at the first tick that finds none.
///
/// Precision: an exchange is expired at the first tick after its timeout has passed, so it fails
/// between its timeout and its timeout plus one tick. The tick is a tenth of the shortest timeout
/// registered since the ticker started (at least 5 ms, at most 1 s): a 60 s timeout fires within
/// 60–61 s, a 1 s timeout within 1–1.1 s.
///
/// Thread safety: every method may be called from any thread; the state is behind one lock, which
/// is never held while an exchange is expired.
final class IdleSweeper: Sendable {
    /// What an exchange must offer to be swept.
    protocol Exchange: AnyObject, Sendable {
        /// Whether the exchange has been silent for its timeout at `now` (an exchange that ended
        /// may say yes too: it is then dropped, and its `expire()` does nothing).
        func isIdle(at now: NIODeadline) -> Bool
        /// Fails the exchange with `.timedOut`. Called without the sweeper's lock held.
        func expire()
    }

    private struct State {
        var exchanges: [ObjectIdentifier: any Exchange] = [:]
        var ticker: RepeatedTask?
        var tick: TimeAmount = .zero
    }

    /// The shortest and the longest tick.
    static let finestTick = TimeAmount.milliseconds(5)
    static let coarsestTick = TimeAmount.seconds(1)

    private let state = NIOLockedValueBox(State())
    private let eventLoopGroup: any EventLoopGroup

    /// A sweeper whose ticker runs on a loop of `eventLoopGroup`.
    init(eventLoopGroup: any EventLoopGroup) {
        self.eventLoopGroup = eventLoopGroup
    }

    /// The tick for an idle timeout: a tenth of it, within ``finestTick`` and ``coarsestTick``.
    static func tick(for timeout: TimeAmount) -> TimeAmount {
        min(max(.nanoseconds(timeout.nanoseconds / 10), finestTick), coarsestTick)
    }

    /// Starts sweeping `exchange`, whose idle timeout is `timeout`.
    func register(_ exchange: any Exchange, timeout: TimeAmount) {
        let tick = Self.tick(for: timeout)
        let replaced = state.withLockedValue { state -> RepeatedTask? in
            state.exchanges[ObjectIdentifier(exchange)] = exchange
            guard state.ticker == nil || tick < state.tick else { return nil }
            // No ticker yet, or one too coarse for this timeout: (re)start it at this tick.
            let old = state.ticker
            state.tick = tick
            state.ticker = startTicker(every: tick)
            return old
        }
        replaced?.cancel()
    }

    /// Stops sweeping `exchange` (it ended or was cancelled). Unknown exchanges are ignored.
    func unregister(_ exchange: any Exchange) {
        state.withLockedValue { _ = $0.exchanges.removeValue(forKey: ObjectIdentifier(exchange)) }
    }

    /// Whether the repeating check runs (for tests: it must stop when nothing is registered).
    var isTicking: Bool {
        state.withLockedValue { $0.ticker != nil }
    }

    /// The number of exchanges swept (for tests).
    var registeredCount: Int {
        state.withLockedValue { $0.exchanges.count }
    }

    /// Called with the lock held; `scheduleRepeatedTask` only schedules, it runs nothing here.
    private func startTicker(every tick: TimeAmount) -> RepeatedTask {
        eventLoopGroup.next().scheduleRepeatedTask(initialDelay: tick, delay: tick) { [weak self] task in
            guard let self else {
                task.cancel()
                return
            }
            self.sweep(task)
        }
    }

    /// One tick: expires the idle exchanges; stops the ticker when none is registered.
    private func sweep(_ task: RepeatedTask) {
        let now = NIODeadline.now()
        let idle = state.withLockedValue { state -> [any Exchange] in
            guard state.ticker === task else {
                // A ticker that was replaced by a finer one (its cancellation is on its way).
                task.cancel()
                return []
            }
            if state.exchanges.isEmpty {
                state.ticker = nil
                task.cancel()
                return []
            }
            let idle = state.exchanges.values.filter { $0.isIdle(at: now) }
            for exchange in idle { state.exchanges.removeValue(forKey: ObjectIdentifier(exchange)) }
            return idle
        }
        for exchange in idle { exchange.expire() }
    }
}

extension IdleSweeper {
    /// `URLRequest.timeoutInterval` as the longest silence an exchange is allowed: a positive,
    /// finite number of seconds (at most 10⁹); anything else means no limit.
    static func silenceAllowed(byTimeoutInterval seconds: Double) -> TimeAmount? {
        seconds > 0 && seconds.isFinite ? .nanoseconds(Int64(min(seconds, 1e9) * 1e9)) : nil
    }
}
