import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A client-side rate limit: at most `requestsPerSecond` requests per ``RequestKey``, with a
/// burst allowance. Excess requests **wait**, first come first served; they are not failed.
///
/// Attach it to a client (``HTTPClient/Configuration/rateLimiter``) and every attempt — retries
/// included — takes a permit before it reaches the transport. A request cancelled while it waits
/// leaves the queue at once and gives its turn to the next. Waits are timed by the scheduler of
/// the client that sends the request (``HTTPClient/Configuration/scheduler``), so tests run them
/// in virtual time; clients sharing one limiter share its buckets, and should share a scheduler.
///
/// A request that had to wait is reported to its client's ``HTTPEventMonitor``s when it is let
/// through (``HTTPEvent/Kind/rateLimitWaited(key:waited:)``). The limiter keeps state only for
/// keys in use: a key whose bucket is full again with nobody waiting is forgotten once many keys
/// have been seen, which changes nothing for its next request.
///
/// Given a ``PolicySharing``, the limit is the **fleet's**: every process that shares the store
/// takes its tokens from one bucket per key, kept by the store with the same arithmetic, first come
/// first served across the fleet; a request that must wait reserves its turn and waits on its
/// client's scheduler. While the store is unavailable, the limiter keeps to this process's share
/// (`requestsPerSecond` and `burst` divided by the fleet size) or to the sharing's other
/// ``PolicySharing/fallback``. Without a sharing, nothing changes: the limiter is in-process.
///
/// Thread safety: all state is behind one lock; permits are granted outside it.
public final class RateLimiter: Sendable {
    /// Requests per second per key.
    let requestsPerSecond: Double
    /// How many requests may go at once after a quiet spell.
    let burst: Int
    /// How requests are grouped.
    let key: RequestKey
    /// Where the fleet's buckets are kept, if they are shared.
    let sharing: PolicySharing?
    /// This process's share of the limit, kept while the store is unavailable.
    private let localShare: RateLimiter?
    private let buckets = Locked<[String: Bucket]>([:])
    private let nextWaiter = Locked<UInt64>(0)
    /// How many buckets may exist before the idle ones are swept: a limiter keyed by origin sees
    /// as many keys as its client sees hosts, which a server may not bound. Doubles with what a
    /// sweep keeps, so sweeps stay rare (amortised constant time per new key).
    private let sweepThreshold = Locked(RateLimiter.minimumSweepThreshold)
    static let minimumSweepThreshold = 1024

    private struct Waiter {
        let id: UInt64
        let observer: Observer<Void, Never>
        /// When it joined the queue, on the client's clock.
        let queuedAt: Duration
        /// Told how long it waited, once it is let through.
        let waited: (@Sendable (_ key: String, _ waited: Duration) -> Void)?
    }

    /// A token bucket and the FIFO queue of the requests waiting for it.
    private struct Bucket {
        var tokens: Double
        var refilledAt: Duration
        var queue: [Waiter] = []
        var timer: (any Cancellable)?
    }

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - requestsPerSecond: the sustained rate per key; must be above zero (a value that is
    ///     not is treated as one request per hour).
    ///   - burst: how many requests may go back to back before spacing starts (at least 1).
    ///   - key: how requests are grouped; scheme + host + port + first path segment by default.
    ///   - sharing: the store through which a fleet shares the limit; `nil` (the default) keeps
    ///     it in this process.
    public init(
        requestsPerSecond: Double,
        burst: Int = 1,
        key: RequestKey = .originAndFirstSegment,
        sharing: PolicySharing? = nil
    ) {
        self.requestsPerSecond = requestsPerSecond.isFinite && requestsPerSecond > 0 ? requestsPerSecond : 1.0 / 3600
        self.burst = max(1, burst)
        self.key = key
        self.sharing = sharing
        if let sharing {
            let share = Double(sharing.fleetSize)
            localShare = RateLimiter(requestsPerSecond: self.requestsPerSecond / share, burst: self.burst / sharing.fleetSize, key: key)
        } else {
            localShare = nil
        }
    }

    /// The permit of a limiter with a ``PolicySharing``: the store's grant (at once, or after the
    /// wait it reserved), or the fallback's while the store is unavailable. A wait is reported to
    /// `waited`; the store's loss and return to `events`, as about `request`. Cancelling it cancels
    /// the store call or the wait. Without a sharing, ``permit(forKey:on:waited:)``.
    func sharedPermit(
        forKey name: String,
        on scheduler: any Scheduler,
        waited: (@Sendable (_ key: String, _ waited: Duration) -> Void)?,
        events: HTTPEventSink?,
        request: TransportRequest?
    ) -> Signal<Void, any Error> {
        guard let sharing else {
            if acquireImmediately(forKey: name, on: scheduler) { return Signal(value: ()) }
            return permit(forKey: name, on: scheduler, waited: waited).setFailureType()
        }
        let start = scheduler.now
        guard sharing.health.isAvailable(at: start) else {
            return fallbackPermit(forKey: name, on: scheduler, waited: waited, failure: PolicyStoreUnavailable(reason: .quarantined))
        }
        let bucket = PolicyStoreBucket(requestsPerSecond: requestsPerSecond, burst: burst)
        let call = sharing.store.takeTokens(1, forKey: name, bucket: bucket, maxWait: nil)
        return sharing.ask(call, on: scheduler, events: events, request: request.map(RequestReference.init))
            .setFailureType(to: (any Error).self)
            .flatMap(maxConcurrent: 1) { [self] answer -> Signal<Void, any Error> in
                switch answer {
                case .success(.now):
                    return Signal(value: ())
                case .success(.after(let wait)), .success(.refused(let wait)):
                    // A store asked for any wait does not refuse; one that does is waited out.
                    return Signal(value: ()).delay(for: wait, scheduler: scheduler).handleEvents(receiveValue: { _ in
                        waited?(name, scheduler.now - start)
                    })
                case .failure(let error):
                    return fallbackPermit(forKey: name, on: scheduler, waited: waited, failure: error)
                }
            }
    }

    /// The permit while the store is unavailable (after `failure`): this process's share of the
    /// limit, every request, or none, as the sharing's fallback says.
    private func fallbackPermit(
        forKey name: String,
        on scheduler: any Scheduler,
        waited: (@Sendable (_ key: String, _ waited: Duration) -> Void)?,
        failure: any Error
    ) -> Signal<Void, any Error> {
        switch sharing?.fallback {
        case .failOpen:
            return Signal(value: ())
        case .failClosed:
            return Signal(error: PolicyStoreUnavailable.after(failure))
        case .localShare, nil:
            let local = localShare ?? self
            if local.acquireImmediately(forKey: name, on: scheduler) { return Signal(value: ()) }
            return local.permit(forKey: name, on: scheduler, waited: waited).setFailureType()
        }
    }

    /// A signal that sends one value, then finishes, when `request` may be sent, waiting on
    /// `scheduler`. Cancelling it while it waits removes the request from the queue.
    func permit(for request: URLRequest, on scheduler: any Scheduler) -> Signal<Void, Never> {
        permit(forKey: key.key(request), on: scheduler)
    }

    /// Takes a token for `name` now if one is free and nobody waits: `true` if the request may go
    /// at once (the fast path of a client, which then needs no permit signal), `false` if it must
    /// wait its turn through ``permit(for:on:)``.
    func acquireImmediately(forKey name: String, on scheduler: any Scheduler) -> Bool {
        // Every request asks: the time is read once (outside the lock, like all scheduler
        // calls), and the bucket is changed in place, with one hash look-up and no copy of its
        // queue.
        let now = scheduler.now
        let (burst, rate) = (Double(self.burst), requestsPerSecond)
        let (granted, count) = buckets.withLock { buckets -> (Bool, Int) in
            (Self.takeToken(from: &buckets[name, default: Bucket(tokens: burst, refilledAt: now)], now: now, burst: burst, rate: rate), buckets.count)
        }
        // A limiter with few keys never reads the threshold: the common path takes no other lock.
        if count > Self.minimumSweepThreshold, count > sweepThreshold.withLock({ $0 }) { sweepIdleBuckets(now: now) }
        return granted
    }

    /// Forgets every bucket that is full again and has nobody waiting: such a bucket is exactly
    /// the one a new key gets, so forgetting it changes no request's fate, and memory stays
    /// bounded by the keys in use rather than every key ever seen.
    private func sweepIdleBuckets(now: Duration) {
        let (burst, rate) = (Double(self.burst), requestsPerSecond)
        let kept = buckets.withLock { buckets -> Int in
            buckets = buckets.filter { _, bucket in
                var bucket = bucket
                Self.refill(&bucket, now: now, burst: burst, rate: rate)
                return !(bucket.queue.isEmpty && bucket.timer == nil && bucket.tokens >= burst)
            }
            return buckets.count
        }
        sweepThreshold.withLock { $0 = max(Self.minimumSweepThreshold, 2 * kept) }
    }

    /// The number of keys the limiter keeps state for.
    var bucketCount: Int { buckets.withLock { $0.count } }

    /// Refills `bucket` to `now` and takes a token if one is free and nobody waits.
    private static func takeToken(from bucket: inout Bucket, now: Duration, burst: Double, rate: Double) -> Bool {
        refill(&bucket, now: now, burst: burst, rate: rate)
        guard bucket.queue.isEmpty, bucket.tokens >= 1 else { return false }
        bucket.tokens -= 1
        return true
    }

    /// ``permit(for:on:)`` for a key computed already; `waited` is told the key and how long the
    /// request waited in the queue when it is let through after waiting (not when it goes at
    /// once).
    func permit(
        forKey name: String,
        on scheduler: any Scheduler,
        waited: (@Sendable (_ key: String, _ waited: Duration) -> Void)? = nil
    ) -> Signal<Void, Never> {
        Signal { [self] observer in
            let now = scheduler.now
            let id = nextWaiter.withLock { id in
                defer { id += 1 }
                return id
            }
            let grantedNow = buckets.withLock { buckets -> Bool in
                var bucket = buckets[name] ?? Bucket(tokens: Double(burst), refilledAt: now)
                refill(&bucket, now: now)
                defer { buckets[name] = bucket }
                if bucket.queue.isEmpty, bucket.tokens >= 1 {
                    bucket.tokens -= 1
                    return true
                }
                bucket.queue.append(Waiter(id: id, observer: observer, queuedAt: bucket.refilledAt, waited: waited))
                return false
            }
            if grantedNow {
                observer.send(())
                observer.finish()
                return nil
            }
            armTimer(for: name, on: scheduler)
            return { [self] in leave(id, from: name) }
        }
    }

    /// The number of requests waiting for `key`.
    func waitingCount(forKey key: String) -> Int {
        buckets.withLock { $0[key]?.queue.count ?? 0 }
    }

    private func refill(_ bucket: inout Bucket, now: Duration) {
        Self.refill(&bucket, now: now, burst: Double(burst), rate: requestsPerSecond)
    }

    /// Adds the tokens earned since the bucket was last refilled, up to `burst`. A `now` read
    /// before another thread refilled the bucket to a later time adds nothing and moves nothing
    /// back.
    private static func refill(_ bucket: inout Bucket, now: Duration, burst: Double, rate: Double) {
        guard now > bucket.refilledAt else { return }
        let elapsed = (now - bucket.refilledAt).timeInterval
        bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
        bucket.refilledAt = now
    }

    /// Schedules the release of the next waiter of `name` on `scheduler`, unless one is scheduled
    /// already.
    private func armTimer(for name: String, on scheduler: any Scheduler) {
        let now = scheduler.now
        let wait = buckets.withLock { buckets -> Duration? in
            guard var bucket = buckets[name], bucket.timer == nil, !bucket.queue.isEmpty else { return nil }
            refill(&bucket, now: now)
            buckets[name] = bucket
            return .seconds(max(0, 1 - bucket.tokens) / requestsPerSecond)
        }
        guard let wait else { return }
        let timer = scheduler.schedule(after: wait) { [weak self] in self?.release(name, on: scheduler) }
        let stale = buckets.withLock { buckets -> Bool in
            // The queue may have emptied (or the timer fired at once) meanwhile.
            guard buckets[name] != nil, !buckets[name]!.queue.isEmpty, buckets[name]!.timer == nil else { return true }
            buckets[name]!.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    /// The timer of `name` fired: grant every waiter a token allows, then wait for the next.
    private func release(_ name: String, on scheduler: any Scheduler) {
        let now = scheduler.now
        let granted = buckets.withLock { buckets -> [Waiter] in
            guard var bucket = buckets[name] else { return [] }
            bucket.timer = nil
            refill(&bucket, now: now)
            var granted: [Waiter] = []
            while bucket.tokens >= 1, !bucket.queue.isEmpty {
                bucket.tokens -= 1
                granted.append(bucket.queue.removeFirst())
            }
            buckets[name] = bucket
            return granted
        }
        for waiter in granted {
            waiter.waited?(name, now - waiter.queuedAt)
            waiter.observer.send(())
            waiter.observer.finish()
        }
        armTimer(for: name, on: scheduler)
    }

    /// A waiter was cancelled: it leaves the queue; an idle, full bucket is forgotten.
    private func leave(_ id: UInt64, from name: String) {
        let timer = buckets.withLock { buckets -> (any Cancellable)? in
            guard var bucket = buckets[name], let index = bucket.queue.firstIndex(where: { $0.id == id }) else { return nil }
            bucket.queue.remove(at: index)
            var cancelled: (any Cancellable)?
            if bucket.queue.isEmpty {
                cancelled = bucket.timer
                bucket.timer = nil
            }
            buckets[name] = bucket
            return cancelled
        }
        timer?.cancel()
    }
}
