import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPClient {
    /// Everything an ``HTTPClient`` is made of, with every default stated here.
    ///
    /// Start from the defaults and change what the client needs; the client keeps the value it
    /// was created with (``HTTPClient/configuration``):
    ///
    /// ```swift
    /// let client = HTTPClient(transport: URLSessionTransport.shared) {
    ///     $0.userAgent = "Forum/2.0"
    ///     $0.rateLimiter = RateLimiter(requestsPerSecond: 20, burst: 8)
    ///     $0.cooldowns = Cooldowns(maxWait: .seconds(30))
    /// }
    /// ```
    ///
    /// **One clock.** ``scheduler`` times everything the client waits for: deadlines, rate-limit
    /// queues, cooldowns, failover quarantines and the timestamps of the monitors' events. The
    /// policies (``RateLimiter``, ``Cooldowns``, ``HostFailover``) have no clock of their own: each
    /// is timed by the scheduler of the client that sends the request. A test gives one
    /// `TestScheduler` to the client and to nothing else. A policy shared by several clients
    /// shares its state (tokens, cooldowns, quarantines) between them; give those clients the same
    /// scheduler, since times read on one clock mean nothing on another.
    public struct Configuration: Sendable {
        /// Where requests go: ``URLSessionTransport/shared`` by default.
        public var transport: any HTTPTransport
        /// Headers added to every request that does not set them itself (names match
        /// case-insensitively): none by default. A header with an invalid name or value fails
        /// every request with ``URLRequestError``, and nothing is sent.
        public var defaultHeaders: [String: String] = [:]
        /// The `User-Agent` header, unless ``defaultHeaders`` or the request sets one: `Transit` by
        /// default; `nil` sends none.
        public var userAgent: String? = "Transit"
        /// Observers of the whole lifecycle of every request: each attempt with its bytes and
        /// timings, redirects, waits, retries, failovers, token refreshes (see
        /// ``HTTPEventMonitor``); their events are stamped by ``scheduler``. None by default: a
        /// client without monitors builds no event.
        public var monitors: [any HTTPEventMonitor] = []
        /// The largest body a buffered request accepts (``HTTPClient/send(_:bodyFile:options:)``):
        /// 32 MiB by default. A larger response fails with
        /// ``ResponseTooLargeError`` as soon as that is known. ``RequestOptions`` can change it per
        /// request; a negative value counts as zero.
        public var maxResponseBytes: Int = HTTPClient.defaultMaxResponseBytes
        /// The total time a buffered request may take, redirects and waits included:
        /// 300 seconds by default. Streams and downloads have a
        /// deadline only when their ``RequestOptions`` set one; the idle timeout
        /// (`URLRequest.timeoutInterval`, 60 s by default) applies separately. Deadlines are
        /// clamped, never refused: a negative one counts as zero (already passed), and one longer
        /// than about 285 years as that, the longest wait Transit times.
        public var deadline: Deadline = HTTPClient.defaultDeadline
        /// Which redirects are followed: ``RedirectPolicy/follow`` (all of them, dropping
        /// credentials across origins and refusing https → http) by default.
        public var redirectPolicy: RedirectPolicy = .follow
        /// More headers to drop from a request redirected to another origin (names in any case),
        /// beyond those ``Redaction`` treats as secret (`Authorization`, `Proxy-Authorization`,
        /// `Cookie`, `X-API-Key`, `X-Auth-Token`, …), which are always dropped: none by default.
        public var sensitiveHeaders: Set<String> = []
        /// The client's one clock: deadlines, the policies' waits and quarantines, and the
        /// monitors' timestamps. a serial dispatch queue of Transit's own by default (not `DispatchQueue.global()`, whose
        /// threads other work can hold, delaying a deadline); a `TestScheduler` in tests.
        public var scheduler: any Scheduler = HTTPClient.timerQueue
        /// A client-side rate limit per ``RequestKey``: every attempt, retries included, takes a
        /// permit before it reaches the transport, and excess requests wait their turn. None by
        /// default.
        public var rateLimiter: RateLimiter?
        /// Shared cooldowns: one 429 or 503 with `Retry-After` pauses new requests to its
        /// ``RequestKey``. None by default.
        public var cooldowns: Cooldowns?
        /// Whether identical GET and HEAD requests (same URL and headers) in flight at the same
        /// time share one network request; each subscriber can cancel on its own. `false` by
        /// default.
        public var coalescesRequests = false
        /// Origins of one service to fail over between on connection-level failures. None by
        /// default.
        public var failover: HostFailover?
        /// Credentials added to every request in their scope (e.g. a ``TokenStore``), renewed once
        /// on a 401 and the request sent again. None by default.
        public var authorizer: (any Authorizer)?

        /// The default configuration, sending with `transport` (``URLSessionTransport/shared``
        /// unless given).
        public init(transport: any HTTPTransport = URLSessionTransport.shared) {
            self.transport = transport
        }
    }
}
