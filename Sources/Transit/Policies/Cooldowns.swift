import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Shared cooldowns: a `429 Too Many Requests` or `503 Service Unavailable` with `Retry-After`
/// on any request pauses **new** requests with the same ``RequestKey`` until that time has
/// passed, so the whole client learns from one answer instead of each request finding out on its
/// own.
///
/// Attach it to a client (``HTTPClient/Configuration/cooldowns``). Cooldowns and waits are timed
/// by the scheduler of the client that sends the request (``HTTPClient/Configuration/scheduler``);
/// clients sharing one registry share its cooldowns, and should share a scheduler.
///
/// A request that would have to wait longer than `maxWait` fails at once with the answer that
/// started the cooldown (its ``HTTPClientError/tooManyRequests(retryAfter:response:)`` or
/// ``HTTPServerError/serviceUnavailable(retryAfter:response:)``, with `retryAfter` set to the
/// time that remains), so a caller's own `respondToRateLimiting` still decides as documented.
///
/// The client's ``HTTPEventMonitor``s are told when a cooldown starts, when a request waits for
/// one and when one refuses a request (``HTTPEvent/Kind/cooldownStarted(key:duration:statusCode:)``,
/// …).
///
/// Given a ``PolicySharing``, a cooldown is the **fleet's**: one started here is written to the
/// store (extended, never shortened), and a cooldown that any process of the fleet started holds
/// back new requests here too, read from the store's local view without a round trip. A request
/// refused by a cooldown that another process saw fails with the same error, without a response.
/// While the store is unavailable, the cooldowns this process saw itself still hold.
///
/// Thread safety: state behind one lock.
public final class Cooldowns: Sendable {
    /// The longest a request waits for a cooldown to end before failing fast.
    let maxWait: Duration
    /// How requests are grouped.
    let key: RequestKey
    /// Where the fleet's cooldowns are kept, if they are shared.
    let sharing: PolicySharing?
    /// Cooldowns being written to the store.
    private let writes = DetachedStoreCalls()
    private let entries = Locked<[String: Entry]>([:])

    struct Entry {
        /// When new requests may go again, on the client's clock.
        let until: Duration
        /// The answer that started the cooldown; `nil` for one another process of the fleet saw.
        let response: HTTPResponse?
    }

    /// Creates the registry.
    ///
    /// - Parameters:
    ///   - maxWait: the longest a new request waits (10 s by default); longer cooldowns fail
    ///     fast.
    ///   - key: how requests are grouped; scheme + host + port + first path segment by default.
    ///   - sharing: the store through which a fleet shares its cooldowns; `nil` (the default)
    ///     keeps them in this process.
    public init(maxWait: Duration = .seconds(10), key: RequestKey = .originAndFirstSegment, sharing: PolicySharing? = nil) {
        self.maxWait = maxWait
        self.key = key
        self.sharing = sharing
    }

    /// How many cooldowns are being written to the store.
    var pendingWrites: Int { writes.count }

    /// The time left on `key`'s cooldown on `scheduler`'s clock, if one is running.
    func remaining(forKey key: String, on scheduler: any Scheduler) -> Duration? {
        let now = scheduler.now
        return entries.withLock { entries -> Duration? in
            guard let entry = entries[key] else { return nil }
            guard entry.until > now else {
                entries[key] = nil
                return nil
            }
            return entry.until - now
        }
    }

    /// Records `head`, the answer to `request`: a 429 or 503 with a `Retry-After` starts (or
    /// extends) the cooldown of its key, on `scheduler`'s clock (a `Retry-After` date is measured
    /// from the answer's own `Date` header when it has one).
    func record(_ head: HTTPResponseHead, for request: URLRequest, on scheduler: any Scheduler) {
        record(head, for: TransportRequest(request), key: key.key(request), on: scheduler)
    }

    /// ``record(_:for:on:)`` for a key computed already; a cooldown started or extended is
    /// reported to `events` (the client's monitors).
    func record(
        _ head: HTTPResponseHead,
        for request: TransportRequest,
        key name: String,
        on scheduler: any Scheduler,
        events: HTTPEventSink? = nil
    ) {
        guard head.statusCode == 429 || head.statusCode == 503,
              let header = head.value(forHTTPHeaderField: "Retry-After"),
              let seconds = RetryAfter.seconds(from: header, serverDate: head.value(forHTTPHeaderField: "Date")), seconds > 0
        else { return }
        let duration = ScheduledSubscription.duration(seconds: seconds)
        let until = scheduler.now + duration
        let response = HTTPResponse(data: Data(), head: head, sent: request)
        let started = entries.withLock { entries -> Bool in
            if let existing = entries[name], existing.until >= until { return false }
            entries[name] = Entry(until: until, response: response)
            return true
        }
        if started, let events {
            events.emit(.cooldownStarted(key: name, duration: duration, statusCode: head.statusCode), request: request)
        }
        if started, let sharing, sharing.health.isAvailable(at: scheduler.now) {
            // Told to the fleet even if the request ends meanwhile; the deadline bounds the call.
            let call = sharing.store.extendCooldown(forKey: name, by: duration, statusCode: head.statusCode)
            writes.run(sharing.ask(call, on: scheduler, events: events, request: RequestReference(request)))
        }
    }

    /// A signal that sends one value when `request` may go: at once, after the cooldown of its
    /// key, or never — failing fast with the cooldown's answer when the wait is longer than
    /// ``maxWait``, timed by `scheduler`. The cooldown is looked up when this is called: call it
    /// when the request is subscribed (the client does, inside a deferred signal).
    func clearance(for request: URLRequest, on scheduler: any Scheduler) -> Signal<Void, any Error> {
        clearance(forKey: key.key(request), on: scheduler)
    }

    /// Whether new requests to `name` may go now on `scheduler`'s clock (no cooldown, or one that
    /// has passed): the fast path of a client, which then needs no clearance signal.
    func isClear(forKey name: String, on scheduler: any Scheduler) -> Bool {
        // The fleet's cooldowns, from the store's local view.
        if let sharing, sharing.store.cooldown(forKey: name) != nil { return false }
        // Every request asks, and almost always nothing is cooling down: no time, no hash.
        if entries.withLock({ $0.isEmpty }) { return true }
        let now = scheduler.now
        return entries.withLock { entries in
            guard let entry = entries[name] else { return true }
            if entry.until <= now { entries[name] = nil; return true }
            return false
        }
    }

    /// ``clearance(for:on:)`` for a key computed already. A wait, or a refusal, is reported to
    /// `events` (the client's monitors) as about `request`.
    func clearance(
        forKey name: String,
        on scheduler: any Scheduler,
        request: TransportRequest? = nil,
        events: HTTPEventSink? = nil
    ) -> Signal<Void, any Error> {
        let now = scheduler.now
        var entry = entries.withLock { entries -> Entry? in
            guard let entry = entries[name] else { return nil }
            if entry.until <= now { entries[name] = nil; return nil }
            return entry
        }
        var statusCode = entry?.response?.statusCode
        // A longer cooldown that another process of the fleet saw holds this request back too.
        if let shared = sharing?.store.cooldown(forKey: name), shared.remaining > (entry.map { $0.until - now } ?? .zero) {
            entry = Entry(until: now + shared.remaining, response: nil)
            statusCode = shared.statusCode
        }
        guard let entry, let statusCode else { return Signal(value: ()) }
        let left = entry.until - now
        guard left <= maxWait else {
            events?.emit(.cooldownRefused(key: name, remaining: left), request: request)
            let response = entry.response
            let retryAfter: Duration? = left
            let error: any Error = statusCode == 429
                ? HTTPClientError.tooManyRequests(retryAfter: retryAfter, response: response)
                : HTTPServerError.serviceUnavailable(retryAfter: retryAfter, response: response)
            return Signal(error: error)
        }
        events?.emit(.cooldownWait(key: name, duration: left), request: request)
        return Signal { observer in
            let wait = scheduler.schedule(after: left) {
                observer.send(())
                observer.finish()
            }
            return { wait.cancel() }
        }
    }
}
