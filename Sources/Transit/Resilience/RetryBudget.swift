import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A retry budget shared by every retry policy that names it (one per client, typically): across
/// all of them, retries stay under a `ratio` of requests plus a small floor per second, so a storm
/// of 5xx cannot multiply the load on a struggling server. (gRPC's retry throttling and Finagle's
/// `RetryBudget` work this way; no Swift or iOS peer has one.)
///
/// ```swift
/// let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 1)
/// let policy = RetryPolicy(maxAttempts: 4, budget: budget)
/// api.get(endpoint: "feed").catchHTTPErrors().retry(policy)
/// ```
///
/// Every request that `retry(_ policy:)` starts deposits in the budget; every retry withdraws.
/// Over the last `window`, a retry is allowed while
/// `retries < ratio × requests + minRetriesPerSecond × window`. A retry the budget refuses fails
/// the request with ``RetryBudgetExhausted``, which carries the failure it would have retried.
///
/// A refusal is reported to the ``HTTPEventMonitor``s of the client that sent the request, as
/// ``HTTPEvent/Kind/retryRefusedByBudget(attempt:failure:)``: the failure carries its client's
/// monitors, so the budget needs no reference to them.
///
/// The budget has no clock of its own: it is timed by the scheduler of the `retry(_ policy:)`
/// that uses it (a `TestScheduler` in tests), which passes its `now` in.
///
/// Given a ``PolicySharing``, the budget is the **fleet's**, under `name`: every process counts its
/// requests and retries into the store (batched, at most every ``PolicySharing/batchInterval``),
/// and a retry is allowed while the fleet's retries, this process's unsent ones included, stay
/// under `ratio` of the fleet's requests plus the floor (`minRetriesPerSecond` is the fleet's).
/// Between two batches each process decides on the totals it last heard, so the fleet may exceed
/// the budget by the retries its processes allow within one batch interval. While the store is
/// unavailable, the budget counts this process alone, with its share of the floor, or follows the
/// sharing's other ``PolicySharing/fallback``.
///
/// Thread safety: state behind one lock.
public final class RetryBudget: Sendable {
    /// The share of requests that may be retried.
    let ratio: Double
    /// Retries allowed per second whatever the traffic (so a quiet client can still retry).
    let minRetriesPerSecond: Double
    /// How far back requests and retries are counted.
    let window: Duration
    private let slices = 10
    /// The length of a slice in seconds: `window / slices`, computed once.
    private let sliceSeconds: Double
    private let counts: Locked<Counts>
    /// Batches on their way to the store.
    private let batches = DetachedStoreCalls()
    /// Where the fleet's counts are kept, if they are shared.
    let sharing: PolicySharing?
    /// The budget's name in the store.
    let name: String
    /// The fleet's counts as last heard, and this process's counts not yet sent.
    private let fleet = Locked(FleetCounts())

    private struct FleetCounts {
        /// The fleet's totals in the store's last answer.
        var heard = PolicyStoreBudgetCounts(requests: 0, retries: 0)
        /// When the last answer came (the retrying operator's time).
        var heardAt: Duration?
        /// Counted here, not sent yet.
        var pendingRequests = 0
        var pendingRetries = 0
        /// Sent, not answered yet.
        var sentRequests = 0
        var sentRetries = 0
        var sending = false
        /// When the last batch was sent.
        var sentAt: Duration?
    }

    private struct Counts {
        /// Per time slice of the window: requests and retries, and which slice (by number) it
        /// holds.
        var requests: [Int]
        var retries: [Int]
        var sliceNumbers: [Int64]
        /// The number of the slice of the last call: while time stays in it, no other slice
        /// can have grown older than the window, so none is looked at.
        var lastNumber: Int64 = .min
    }

    /// Creates a budget.
    ///
    /// - Parameters:
    ///   - ratio: the share of requests that may be retried (0.2: one retry per five requests).
    ///   - minRetriesPerSecond: a floor of retries per second, whatever the traffic.
    ///   - window: how far back requests and retries count (10 s by default); zero or negative
    ///     means the default.
    ///   - name: the budget's name in the store of `sharing`: processes that name the same budget
    ///     share it.
    ///   - sharing: the store through which a fleet shares the budget; `nil` (the default) keeps
    ///     it in this process.
    public init(
        ratio: Double = 0.2,
        minRetriesPerSecond: Double = 1,
        window: Duration = .seconds(10),
        name: String = "default",
        sharing: PolicySharing? = nil
    ) {
        self.name = name
        self.sharing = sharing
        self.ratio = ratio.isFinite ? max(0, ratio) : 0
        self.minRetriesPerSecond = minRetriesPerSecond.isFinite ? max(0, minRetriesPerSecond) : 0
        self.window = window > .zero ? window : .seconds(10)
        sliceSeconds = self.window.timeInterval / Double(slices)
        counts = Locked(Counts(requests: Array(repeating: 0, count: slices), retries: Array(repeating: 0, count: slices),
                              sliceNumbers: Array(repeating: -1, count: slices)))
    }

    /// Counts a request started at `now` (the time of the retrying operator's scheduler).
    package func recordRequest(at now: Duration) {
        counts.withLock { counts in
            let index = currentSlice(&counts, now: now)
            counts.requests[index] += 1
        }
    }

    /// Takes one retry from the budget at `now` (the time of the retrying operator's scheduler):
    /// `true` if the retry may go (and is counted), `false` if the budget is spent.
    package func withdrawRetry(at now: Duration) -> Bool {
        withdrawRetry(at: now, floor: minRetriesPerSecond)
    }

    /// ``withdrawRetry(at:)`` with `floor` retries per second allowed whatever the traffic.
    private func withdrawRetry(at now: Duration, floor: Double) -> Bool {
        counts.withLock { counts in
            let index = currentSlice(&counts, now: now)
            let requests = counts.requests.reduce(0, +)
            let retries = counts.retries.reduce(0, +)
            let allowance = ratio * Double(requests) + floor * window.timeInterval
            guard Double(retries) < allowance else { return false }
            counts.retries[index] += 1
            return true
        }
    }

    /// Counts a request started now on `scheduler`: in this process, and, with a sharing, in the
    /// fleet's next batch.
    package func recordRequest(on scheduler: any Scheduler) {
        let now = scheduler.now
        recordRequest(at: now)
        guard let sharing else { return }
        fleet.withLock { $0.pendingRequests += 1 }
        sendBatch(through: sharing, on: scheduler, events: nil, request: nil)
    }

    /// Takes one retry from the budget now on `scheduler`, to retry `failure`: with a sharing,
    /// against the fleet's totals (or the fallback while the store is unavailable); without one,
    /// ``withdrawRetry(at:)``.
    package func withdrawRetry(on scheduler: any Scheduler, failure: any Error) -> Bool {
        withdrawRetry(on: scheduler, failure: failure, events: nil)
    }

    /// ``withdrawRetry(on:failure:)``, the store's reports going to `events`.
    func withdrawRetry(on scheduler: any Scheduler, failure: any Error, events: HTTPEventSink?) -> Bool {
        let now = scheduler.now
        guard let sharing else { return withdrawRetry(at: now) }
        if let events { sharing.health.deliverUnreported(to: events, request: HTTPEventSink.request(of: failure)) }
        guard sharing.health.isAvailable(at: now) else {
            switch sharing.fallback {
            case .failOpen: return true
            case .failClosed: return false
            case .localShare: return withdrawRetry(at: now, floor: minRetriesPerSecond / Double(sharing.fleetSize))
            }
        }
        let (ratio, floor, window) = (self.ratio, minRetriesPerSecond, self.window)
        let allowed = fleet.withLock { fleet -> Bool in
            // Totals older than the window no longer count.
            let heard = if let heardAt = fleet.heardAt, now - heardAt < window { fleet.heard } else { PolicyStoreBudgetCounts(requests: 0, retries: 0) }
            let requests = heard.requests + fleet.sentRequests + fleet.pendingRequests
            let retries = heard.retries + fleet.sentRetries + fleet.pendingRetries
            guard Double(retries) < ratio * Double(requests) + floor * window.timeInterval else { return false }
            fleet.pendingRetries += 1
            return true
        }
        // This process's own counts stay current, for the fallback.
        if allowed { counts.withLock { counts in counts.retries[currentSlice(&counts, now: now)] += 1 } }
        sendBatch(through: sharing, on: scheduler, events: events, request: HTTPEventSink.request(of: failure))
        return allowed
    }

    /// Sends the counts not sent yet, unless a batch is on its way or the last went less than the
    /// batch interval ago; the answer replaces the fleet's totals.
    private func sendBatch(through sharing: PolicySharing, on scheduler: any Scheduler, events: HTTPEventSink?, request: TransportRequest?) {
        let now = scheduler.now
        guard sharing.health.isAvailable(at: now) else { return }
        let batch = fleet.withLock { fleet -> (requests: Int, retries: Int)? in
            guard !fleet.sending, fleet.pendingRequests + fleet.pendingRetries > 0 else { return nil }
            if let sentAt = fleet.sentAt, now - sentAt < sharing.batchInterval { return nil }
            fleet.sending = true
            fleet.sentAt = now
            (fleet.sentRequests, fleet.sentRetries) = (fleet.pendingRequests, fleet.pendingRetries)
            (fleet.pendingRequests, fleet.pendingRetries) = (0, 0)
            return (fleet.sentRequests, fleet.sentRetries)
        }
        guard let batch else { return }
        let call = sharing.store.recordBudget(name, requests: batch.requests, retries: batch.retries, window: window)
        let fleet = self.fleet
        batches.run(sharing.ask(call, on: scheduler, events: events, request: request.map(RequestReference.init)).handleEvents(receiveValue: { answer in
            let now = scheduler.now
            fleet.withLock { fleet in
                fleet.sending = false
                (fleet.sentRequests, fleet.sentRetries) = (0, 0)
                // A batch the store did not count is dropped: the fallback counts locally meanwhile.
                if case .success(let totals) = answer {
                    fleet.heard = totals
                    fleet.heardAt = now
                }
            }
        }))
    }

    /// The slice of `now`, emptied if it held an older time.
    private func currentSlice(_ counts: inout Counts, now: Duration) -> Int {
        // A scheduler's time has an arbitrary origin: it may be negative, or far enough from zero
        // that the slice number would overflow. Clamped to ±2⁶², differences stay in range.
        let raw = (now.timeInterval / sliceSeconds).rounded(.down)
        let number = raw.isNaN ? 0 : Int64(max(-0x1p62, min(0x1p62, raw)))
        let index = Int((number % Int64(slices) + Int64(slices)) % Int64(slices))
        // The common case, every request within one slice: nothing to clear.
        guard number != counts.lastNumber else { return index }
        counts.lastNumber = number
        if counts.sliceNumbers[index] != number {
            counts.sliceNumbers[index] = number
            counts.requests[index] = 0
            counts.retries[index] = 0
        }
        // Slices older than the window are cleared lazily: they no longer count. Which slices
        // are too old changes only when the slice number does.
        for other in 0..<slices where other != index && number - counts.sliceNumbers[other] >= Int64(slices) {
            counts.requests[other] = 0
            counts.retries[other] = 0
        }
        return index
    }
}

/// A retry that the ``RetryBudget`` refused: too many retries lately across the client.
public struct RetryBudgetExhausted: Error, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The failure that would have been retried.
    public let failure: any Error

    /// Creates the error.
    package init(failure: any Error) {
        self.failure = failure
    }

    public var description: String {
        "The request failed (\(String(describing: failure))) and was not retried: the client's retry budget is spent "
            + "(too many retries lately), which protects a struggling server from a retry storm."
    }
}
