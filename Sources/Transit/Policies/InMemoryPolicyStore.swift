import Signals

/// A ``PolicyStore`` in memory, timed by a scheduler: the reference for the arithmetic every store
/// keeps, and the store of tests (a `TestScheduler` makes it virtual time).
///
/// - Buckets are GCRA cells: each key keeps its *theoretical arrival time* (`tat`), the time its
///   bucket is full again. Taking `n` tokens at `now` moves it to `max(tat, now) + n × T`
///   (`T = 1 / requestsPerSecond`); the caller may go once that is at most `burst × T` ahead of
///   `now`, and waits for the difference otherwise. A refused call leaves `tat` as it was.
/// - Cooldowns keep the latest end any call asked for.
/// - Budgets count requests and retries per name in time slices of a tenth of the window.
///
/// Several clients given one store share its state as processes would share a database. For
/// tests, ``setOutage(_:)`` makes every call fail or go unanswered, and `latency` delays answers.
///
/// Thread safety: state behind one lock; answers are delivered outside it.
public final class InMemoryPolicyStore: PolicyStore {
    /// How the store misbehaves, for tests of the policies' fallback.
    public enum Outage: Sendable, Hashable {
        /// Every call is answered.
        case none
        /// Every call fails at once with ``InMemoryPolicyStore/Unreachable``.
        case failing
        /// Every call stays unanswered until it is cancelled (a deadline must end it).
        case silent
    }

    /// The failure of a call while the store is ``Outage/failing``.
    public struct Unreachable: Error, Sendable, Hashable, CustomStringConvertible {
        /// Creates the error.
        public init() {}

        public var description: String { "The in-memory policy store is set to fail every call." }
    }

    private struct Cooldown {
        var until: Duration
        var statusCode: Int
    }

    private struct Slice {
        var number: Int64
        var requests: Int
        var retries: Int
    }

    private struct State {
        var tats: [String: Duration] = [:]
        var cooldowns: [String: Cooldown] = [:]
        var budgets: [String: [Slice]] = [:]
        var outage: Outage = .none
        var calls = 0
    }

    private let scheduler: any Scheduler
    private let latency: Duration
    private let state = Locked(State())

    /// Creates an empty store.
    ///
    /// - Parameters:
    ///   - scheduler: the store's clock, and where delayed answers are delivered.
    ///   - latency: how long each call takes to answer (none by default: at once, on the
    ///     subscribing thread).
    public init(scheduler: any Scheduler, latency: Duration = .zero) {
        self.scheduler = scheduler
        self.latency = max(.zero, latency)
    }

    /// Makes every later call misbehave as `outage` says (``Outage/none`` restores the store).
    public func setOutage(_ outage: Outage) {
        state.withLock { $0.outage = outage }
    }

    /// How many calls reached the store (answered or not); ``cooldown(forKey:)`` is not a call.
    public var callCount: Int { state.withLock { $0.calls } }

    public func takeTokens(_ count: Int, forKey key: String, bucket: PolicyStoreBucket, maxWait: Duration?) -> Signal<PolicyStoreGrant, any Error> {
        answer { [scheduler] state in
            let now = scheduler.now
            let interval = bucket.emissionInterval
            let start = max(state.tats[key] ?? now, now)
            let newTat = start + interval * max(1, count)
            let wait = max(.zero, newTat - interval * bucket.burst - now)
            if let maxWait, wait > maxWait { return .refused(wait: wait) }
            state.tats[key] = newTat
            return wait == .zero ? .now : .after(wait)
        }
    }

    public func extendCooldown(forKey key: String, by duration: Duration, statusCode: Int) -> Signal<Void, any Error> {
        answer { [scheduler] state in
            let until = scheduler.now + duration
            if let existing = state.cooldowns[key], existing.until >= until { return }
            state.cooldowns[key] = Cooldown(until: until, statusCode: statusCode)
        }
    }

    public func cooldown(forKey key: String) -> PolicyStoreCooldown? {
        let now = scheduler.now
        return state.withLock { state in
            guard let cooldown = state.cooldowns[key] else { return nil }
            guard cooldown.until > now else {
                state.cooldowns[key] = nil
                return nil
            }
            return PolicyStoreCooldown(remaining: cooldown.until - now, statusCode: cooldown.statusCode)
        }
    }

    public func recordBudget(_ name: String, requests: Int, retries: Int, window: Duration) -> Signal<PolicyStoreBudgetCounts, any Error> {
        answer { [scheduler] state in
            let sliceLength = window / 10
            let number = Int64((scheduler.now / sliceLength).rounded(.down))
            var slices = state.budgets[name, default: []].filter { number - $0.number < 10 }
            if let last = slices.indices.last, slices[last].number == number {
                slices[last].requests += requests
                slices[last].retries += retries
            } else {
                slices.append(Slice(number: number, requests: requests, retries: retries))
            }
            state.budgets[name] = slices
            return PolicyStoreBudgetCounts(
                requests: slices.reduce(0) { $0 + $1.requests },
                retries: slices.reduce(0) { $0 + $1.retries }
            )
        }
    }

    /// A call: `body` runs on the state when the call is answered (at once, or after the latency),
    /// unless the store is out.
    private func answer<Answer: Sendable>(_ body: @escaping @Sendable (inout State) -> Answer) -> Signal<Answer, any Error> {
        let (state, scheduler, latency) = (self.state, self.scheduler, self.latency)
        return Signal { observer in
            let outage = state.withLock { state -> Outage in
                state.calls += 1
                return state.outage
            }
            switch outage {
            case .failing:
                observer.fail(Unreachable())
                return nil
            case .silent:
                return nil
            case .none:
                break
            }
            let deliver: @Sendable () -> Void = {
                let answer = state.withLock(body)
                observer.send(answer)
                observer.finish()
            }
            guard latency > .zero else {
                deliver()
                return nil
            }
            let timer = scheduler.schedule(after: latency, deliver)
            return { timer.cancel() }
        }
    }
}
