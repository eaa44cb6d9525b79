import Signals

/// Where ``RateLimiter``, ``Cooldowns`` and ``RetryBudget`` keep the state that a fleet of
/// processes shares, so twenty instances of a service hold one limit between them instead of
/// twenty.
///
/// A store answers four questions, and only **durations** cross it, never instants: the store
/// times everything on its own clock (a database's `now()`, a scheduler), so machines whose clocks
/// disagree still share one limit.
///
/// - ``takeTokens(_:forKey:bucket:maxWait:)``: a rate limit's bucket, first come first served
///   across the fleet (the generic cell rate algorithm, GCRA);
/// - ``extendCooldown(forKey:by:statusCode:)``: a cooldown started or extended, never shortened;
/// - ``cooldown(forKey:)``: the cooldown of a key **without a round trip** (the store keeps a
///   local view, pushed to it);
/// - ``recordBudget(_:requests:retries:window:)``: requests and retries counted against a named
///   retry budget, answered with the fleet's totals.
///
/// Every call that goes to the store is a `Signal` that sends one value and finishes (or fails):
/// cancelling its subscription cancels the call, which is how a store call ends with its request.
/// The policies put a short deadline on every call (``PolicySharing/deadline``) and treat a
/// failure or a missed deadline alike: the policy falls back to its local share of the limit
/// (see ``PolicySharing``).
///
/// ``InMemoryPolicyStore`` is the reference implementation (one process, timed by a scheduler);
/// the `TransitPostgres` adapter package keeps the state in PostgreSQL.
public protocol PolicyStore: Sendable {
    /// Takes `count` tokens from the bucket of `key`, or reserves them: the store answers
    /// ``PolicyStoreGrant/now`` when they are free, ``PolicyStoreGrant/after(_:)`` when the caller
    /// is next in line once that time has passed (the tokens are then reserved for it, so callers
    /// across the fleet go in the order the store received them), or
    /// ``PolicyStoreGrant/refused(wait:)`` when the wait would be longer than `maxWait` (nothing
    /// is taken). `maxWait` `nil` allows any wait.
    ///
    /// The arithmetic is GCRA: a bucket holds `burst` tokens and earns `requestsPerSecond` a
    /// second; a key never seen is a full bucket.
    func takeTokens(_ count: Int, forKey key: String, bucket: PolicyStoreBucket, maxWait: Duration?) -> Signal<PolicyStoreGrant, any Error>

    /// Starts the cooldown of `key` for `duration`, or extends it: a cooldown already running
    /// longer is kept (a cooldown is never shortened). `statusCode` is the answer that started it
    /// (429 or 503), which a process that did not see it reports. Every process sharing the store
    /// sees the cooldown through ``cooldown(forKey:)``.
    func extendCooldown(forKey key: String, by duration: Duration, statusCode: Int) -> Signal<Void, any Error>

    /// The cooldown of `key` as this process last heard of it (no round trip: a store pushes
    /// cooldowns to every process), or `nil` when none is running.
    func cooldown(forKey key: String) -> PolicyStoreCooldown?

    /// Adds `requests` requests and `retries` retries to the budget named `name` and answers the
    /// fleet's totals over the last `window`, these included. A budget's name is its identity:
    /// every process that names it shares it.
    func recordBudget(_ name: String, requests: Int, retries: Int, window: Duration) -> Signal<PolicyStoreBudgetCounts, any Error>
}

/// The shape of a rate limit's bucket, as a ``PolicyStore`` is asked to keep it.
public struct PolicyStoreBucket: Sendable, Hashable {
    /// Tokens earned per second (above zero).
    public var requestsPerSecond: Double
    /// How many tokens a full bucket holds (at least 1).
    public var burst: Int

    /// Creates a bucket shape; a rate that is not above zero is one token per hour, a burst
    /// below 1 is 1.
    public init(requestsPerSecond: Double, burst: Int) {
        self.requestsPerSecond = requestsPerSecond.isFinite && requestsPerSecond > 0 ? requestsPerSecond : 1.0 / 3600
        self.burst = max(1, burst)
    }

    /// The time one token takes to earn.
    public var emissionInterval: Duration { .seconds(1 / requestsPerSecond) }
}

/// A ``PolicyStore``'s answer to ``PolicyStore/takeTokens(_:forKey:bucket:maxWait:)``.
public enum PolicyStoreGrant: Sendable, Hashable {
    /// The tokens are taken: go now.
    case now
    /// The tokens are reserved: go once this time has passed.
    case after(Duration)
    /// The wait would have been `wait`, longer than the caller allows; nothing was taken.
    case refused(wait: Duration)
}

/// A cooldown as a ``PolicyStore`` reports it.
public struct PolicyStoreCooldown: Sendable, Hashable {
    /// The time left, measured when the store answered.
    public var remaining: Duration
    /// The status of the answer that started it (429 or 503).
    public var statusCode: Int

    /// Creates a report.
    public init(remaining: Duration, statusCode: Int) {
        self.remaining = remaining
        self.statusCode = statusCode
    }
}

/// A retry budget's totals across a fleet, as a ``PolicyStore`` counted them over a window.
public struct PolicyStoreBudgetCounts: Sendable, Hashable {
    /// Requests started.
    public var requests: Int
    /// Retries withdrawn.
    public var retries: Int

    /// Creates totals.
    public init(requests: Int, retries: Int) {
        self.requests = requests
        self.retries = retries
    }
}
