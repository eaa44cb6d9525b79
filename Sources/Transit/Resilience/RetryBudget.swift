import Foundation
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
    public init(
        ratio: Double = 0.2,
        minRetriesPerSecond: Double = 1,
        window: Duration = .seconds(10)
    ) {
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
        counts.withLock { counts in
            let index = currentSlice(&counts, now: now)
            let requests = counts.requests.reduce(0, +)
            let retries = counts.retries.reduce(0, +)
            let allowance = ratio * Double(requests) + minRetriesPerSecond * window.timeInterval
            guard Double(retries) < allowance else { return false }
            counts.retries[index] += 1
            return true
        }
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
