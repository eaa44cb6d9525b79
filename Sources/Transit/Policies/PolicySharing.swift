import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// How a policy shares its state through a ``PolicyStore``, and what it does when the store fails.
///
/// ```swift
/// let sharing = PolicySharing(store: store, fleetSize: 20)
/// let client = HTTPClient {
///     $0.rateLimiter = RateLimiter(requestsPerSecond: 50, burst: 10, sharing: sharing)
///     $0.cooldowns = Cooldowns(sharing: sharing)
/// }
/// let policy = RetryPolicy(maxAttempts: 3, budget: RetryBudget(name: "partner", sharing: sharing))
/// ```
///
/// Every store call has a short ``deadline``. A call that fails or misses it **quarantines** the
/// store for ``quarantine``: the policies skip it meanwhile and act on their own, as ``fallback``
/// says — by default each process keeps to its **local share** of the limit (the limit divided by
/// ``fleetSize``), so the fleet as a whole stays near the limit instead of multiplying it by the
/// fleet size (failing open) or refusing everything (failing closed). The first call after the
/// quarantine tries the store again. The monitors of the client whose request found out are told
/// when the store is lost and when it comes back (``HTTPEvent/Kind/policyStoreLost(error:quarantine:)``,
/// ``HTTPEvent/Kind/policyStoreRestored(after:)``).
///
/// Policies given the same value share its quarantine: one failed call sends all of them to their
/// local share. Timing (deadlines, quarantine) is on the scheduler of the client that sends the
/// request, so tests run it in virtual time.
public struct PolicySharing: Sendable {
    /// What a policy does while its store is unavailable.
    public enum Fallback: Sendable, Hashable {
        /// Keep to this process's share of the limit: the rate and burst of a rate limit, and the
        /// floor of a retry budget, divided by the fleet size; cooldowns this process saw itself.
        /// The default.
        case localShare
        /// Let every request and every retry go (cooldowns this process saw itself still hold).
        case failOpen
        /// Fail every request that needs a token with ``PolicyStoreUnavailable`` and refuse
        /// every retry (cooldowns this process saw itself still hold).
        case failClosed
    }

    /// Where the state is kept.
    public let store: any PolicyStore
    /// How many processes share the store, as the caller states it (at least 1): the local share
    /// of a limit is the limit divided by it.
    public let fleetSize: Int
    /// The longest a store call may take before it counts as failed.
    public let deadline: Duration
    /// How long the store is skipped after a call failed.
    public let quarantine: Duration
    /// What the policies do while the store is unavailable.
    public let fallback: Fallback
    /// How often a ``RetryBudget`` sends the requests and retries it counted to the store, at
    /// most: the counters are batched, so a busy process does not pay a round trip per request.
    public let batchInterval: Duration
    /// Whether the store is quarantined, shared by every policy given this value.
    let health: PolicyStoreHealth

    /// Creates a sharing.
    ///
    /// - Parameters:
    ///   - store: where the state is kept.
    ///   - fleetSize: how many processes share it (at least 1).
    ///   - deadline: the longest a store call may take (250 ms by default).
    ///   - quarantine: how long the store is skipped after a failed call (5 s by default).
    ///   - fallback: what the policies do meanwhile (``Fallback/localShare`` by default).
    ///   - batchInterval: how often a retry budget sends its counts, at most (100 ms by default).
    public init(
        store: any PolicyStore,
        fleetSize: Int,
        deadline: Duration = .milliseconds(250),
        quarantine: Duration = .seconds(5),
        fallback: Fallback = .localShare,
        batchInterval: Duration = .milliseconds(100)
    ) {
        self.store = store
        self.fleetSize = max(1, fleetSize)
        self.deadline = deadline > .zero ? deadline : .milliseconds(250)
        self.quarantine = quarantine > .zero ? quarantine : .seconds(5)
        self.fallback = fallback
        self.batchInterval = max(.zero, batchInterval)
        health = PolicyStoreHealth()
    }

    /// `call` with the deadline, its outcome recorded in the quarantine: a value, or the failure
    /// (the call's own error, or ``PolicyStoreUnavailable`` for a missed deadline or a call that
    /// finished without answering). Transitions are reported to `events` as about `request`.
    func ask<Answer: Sendable>(
        _ call: Signal<Answer, any Error>,
        on scheduler: any Scheduler,
        events: HTTPEventSink?,
        request: RequestReference?
    ) -> Signal<Result<Answer, any Error>, Never> {
        let (health, quarantine, deadline) = (self.health, self.quarantine, self.deadline)
        return Signal { observer in
            let answered = Locked(false)
            let token = call.timeout(deadline, scheduler: scheduler).observe(Observer { event in
                let result: Result<Answer, any Error>
                switch event {
                case .value(let answer):
                    guard answered.withLock({ done in defer { done = true }; return !done }) else { return }
                    result = .success(answer)
                case .failed(let error):
                    guard answered.withLock({ done in defer { done = true }; return !done }) else { return }
                    result = .failure(error is TimeoutError ? PolicyStoreUnavailable(reason: .deadline(deadline)) : error)
                case .finished:
                    guard answered.withLock({ done in defer { done = true }; return !done }) else { return }
                    result = .failure(PolicyStoreUnavailable(reason: .noAnswer))
                }
                let now = scheduler.now
                let report: HTTPEvent.Kind? = switch result {
                case .success: health.succeeded(at: now)
                case .failure(let error): health.failed(error, at: now, quarantine: quarantine)
                }
                if let report {
                    if let events {
                        health.deliverUnreported(to: events, request: request?.request)
                        events.emit(report, request: request?.request)
                    } else {
                        health.keepUnreported(report)
                    }
                }
                observer.send(result)
                observer.finish()
            })
            return { token.cancel() }
        }
    }
}

/// A request as a policy's report names it; a class so a closure that may never report holds one
/// reference, not a copy of the request.
final class RequestReference: Sendable {
    let request: TransportRequest

    init(_ request: TransportRequest) {
        self.request = request
    }
}

/// A request or a retry that needed a ``PolicyStore`` which could not be reached, under
/// ``PolicySharing/Fallback/failClosed``.
public struct PolicyStoreUnavailable: Error, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// Why the store could not be used.
    public enum Reason: Sendable, Hashable {
        /// The store is quarantined after a failed call.
        case quarantined
        /// A call took longer than the deadline.
        case deadline(Duration)
        /// A call ended without an answer.
        case noAnswer
        /// A call failed.
        case callFailed
    }

    /// Why the store could not be used.
    public let reason: Reason

    /// Creates the error.
    package init(reason: Reason) {
        self.reason = reason
    }

    public var description: String {
        let why = switch reason {
        case .quarantined: "it failed lately and is skipped for a while"
        case .deadline(let deadline): "it did not answer within \(deadline)"
        case .noAnswer: "it ended a call without answering"
        case .callFailed: "a call to it failed"
        }
        return "The policy store that shares this client's limits with its fleet could not be used (\(why)); "
            + "the policy is set to fail closed (PolicySharing.Fallback.failClosed), so the request was not sent."
    }
}

extension PolicyStoreUnavailable {
    /// The error a fail-closed policy fails with after `error`, a store call's failure.
    static func after(_ error: any Error) -> PolicyStoreUnavailable {
        error as? PolicyStoreUnavailable ?? PolicyStoreUnavailable(reason: .callFailed)
    }
}

/// Store calls that outlive the code that made them (a cooldown reported after its request
/// ended): each is kept until it answers, which its deadline bounds.
///
/// Thread safety: state behind one lock.
final class DetachedStoreCalls: Sendable {
    private let calls = Locked<[UInt64: CancellationToken]>([:])
    private let nextID = Locked<UInt64>(0)

    /// Subscribes `call` and keeps it until it ends.
    func run<Answer: Sendable>(_ call: Signal<Answer, Never>) {
        let id = nextID.withLock { id in
            defer { id += 1 }
            return id
        }
        let ended = Locked(false)
        let token = call.observe(Observer { [calls] event in
            guard case .finished = event else { return }
            ended.withLock { $0 = true }
            _ = calls.withLock { $0.removeValue(forKey: id) }
        })
        // A call that answered at once has nothing to keep.
        calls.withLock { calls in
            if !ended.withLock({ $0 }) { calls[id] = token }
        }
    }

    /// How many calls are waiting for an answer.
    var count: Int { calls.withLock { $0.count } }
}

/// Whether a store is quarantined: the state machine behind ``PolicySharing``'s quarantine.
///
/// Thread safety: state behind one lock.
final class PolicyStoreHealth: Sendable {
    private struct State {
        /// Until when the store is skipped, while it is quarantined.
        var quarantinedUntil: Duration?
        /// When it was lost.
        var lostAt: Duration = .zero
    }

    private let state = Locked(State())
    /// Transitions found by calls that had no monitors to tell (a retry budget counting a
    /// request): the next call that has them reports them. The last two at most.
    private let unreported = Locked<[HTTPEvent.Kind]>([])

    /// Keeps `report` for the next call that has monitors.
    func keepUnreported(_ report: HTTPEvent.Kind) {
        unreported.withLock { kept in
            kept.append(report)
            if kept.count > 2 { kept.removeFirst(kept.count - 2) }
        }
    }

    /// Reports the transitions kept for want of monitors to `events`, as about `request`.
    func deliverUnreported(to events: HTTPEventSink, request: TransportRequest?) {
        let kept = unreported.withLock { kept in
            defer { kept = [] }
            return kept
        }
        for report in kept { events.emit(report, request: request) }
    }

    /// Whether a call should go to the store at `now`: not while it is quarantined. Once the
    /// quarantine is over, every call tries it again until one answers or fails.
    func isAvailable(at now: Duration) -> Bool {
        state.withLock { state in
            guard let until = state.quarantinedUntil else { return true }
            return now >= until
        }
    }

    /// Whether the store is quarantined (whatever the time).
    var isQuarantined: Bool { state.withLock { $0.quarantinedUntil != nil } }

    /// A call answered at `now`: the store is back if it was lost (the report to make).
    func succeeded(at now: Duration) -> HTTPEvent.Kind? {
        state.withLock { state in
            guard state.quarantinedUntil != nil else { return nil }
            state.quarantinedUntil = nil
            return .policyStoreRestored(after: now - state.lostAt)
        }
    }

    /// A call failed at `now`: the store is quarantined (again) until `now + quarantine`; the
    /// report to make when it was available until now.
    func failed(_ error: any Error, at now: Duration, quarantine: Duration) -> HTTPEvent.Kind? {
        state.withLock { state in
            let wasAvailable = state.quarantinedUntil == nil
            state.quarantinedUntil = now + quarantine
            guard wasAvailable else { return nil }
            state.lostAt = now
            return .policyStoreLost(error: error, quarantine: quarantine)
        }
    }
}
