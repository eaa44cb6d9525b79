import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// When and how long to wait before sending a failed request again: jittered exponential
/// back-off, transient failures only, and only methods it is safe to send twice (the idempotent
/// ones by default) unless the caller opts in.
///
/// Used by `Signal.retry(_:method:scheduler:)`.
///
/// **Back-off.** Before retry number `n` (1 for the first retry) the ceiling is
/// `min(maxDelay, baseDelay × multiplier^(n−1))`, and the wait, with `r = random()` in `0..<1`:
/// - ``Jitter/full`` (the default, as in AWS's "Exponential Backoff And Jitter"): `r × ceiling`,
///   which spreads clients that failed together over the whole interval;
/// - ``Jitter/equal``: `ceiling / 2 + r × ceiling / 2`, which keeps at least half the ceiling;
/// - ``Jitter/none``: `ceiling`.
///
/// **What is retried.** Three public sets say it, as data: ``retryableStatusCodes`` (HTTP
/// errors), ``retryableURLErrorCodes`` (transport failures) and ``retryableMethods``. A failure
/// is retried only if its status or `URLError` code is in its set, attempts remain, and sending
/// the request again is safe:
/// - the error says the request never reached the server (connection refused, no route, DNS
///   failure): safe for every method;
/// - otherwise the method must be in ``retryableMethods``, or ``retryNonIdempotent`` must be
///   `true`. The method is read from the request in an HTTP error's response, or from the
///   request of a ``TransportError`` (what ``HTTPClient`` fails with when the transport fails);
///   otherwise — a bare `URLError` from a transport used without a client — the method passed
///   to the operator is used, and when none is known the request is not retried.
///
/// Transport failures are classified by their `URLError` code, read from a ``TransportError``
/// or from a bare `URLError`.
///
/// **Retry-After on 503.** The wait is the larger of the back-off and the server's Retry-After.
/// If the server asks for longer than ``maxWait``, the signal fails at once with the 503
/// rather than retrying early.
public struct RetryPolicy: Sendable {
    /// How the back-off is randomised. See ``RetryPolicy``.
    public enum Jitter: Sendable, Hashable {
        /// No randomness: wait the ceiling.
        case none
        /// Wait `random × ceiling`.
        case full
        /// Wait `ceiling / 2 + random × ceiling / 2`.
        case equal
    }

    /// The most attempts in all, the first one included; at least 1 (1 means no retry).
    public var maxAttempts: Int
    /// The back-off ceiling before the first retry.
    public var baseDelay: Duration
    /// How much the ceiling grows with each retry.
    public var multiplier: Double
    /// The largest back-off ceiling.
    public var maxDelay: Duration
    /// How the back-off is randomised.
    public var jitter: Jitter
    /// The longest wait a 503's Retry-After may ask for; a longer one fails at once. The same
    /// name as ``Cooldowns``' `maxWait` and `respondToRateLimiting(maxWait:scheduler:)`'s.
    public var maxWait: Duration
    /// Retry requests whose method is not idempotent (POST, PATCH) or unknown. Off by default:
    /// a POST that timed out may have been processed, and sending it again may do it twice.
    public var retryNonIdempotent: Bool
    /// The source of randomness for the jitter: a number in `0..<1` (values outside are clamped).
    /// Inject a fixed one in tests.
    package var random: @Sendable () -> Double
    /// The methods that are sent again after a failure that may have reached the server. By
    /// default the methods RFC 9110 §9.2.2 calls idempotent, for which sending the request twice
    /// has the effect of sending it once: GET, HEAD, OPTIONS, TRACE, PUT and DELETE.
    public var retryableMethods: Set<HTTPMethod> {
        get { retryable.methods }
        set { retryable = Retryable(methods: newValue, statusCodes: retryable.statusCodes, urlErrorCodes: retryable.urlErrorCodes) }
    }
    /// The HTTP status codes worth trying again (read from an ``HTTPError``). By default the
    /// ones that say the failure is temporary: 408, 500, 502, 503 and 504.
    public var retryableStatusCodes: Set<Int> {
        get { retryable.statusCodes }
        set { retryable = Retryable(methods: retryable.methods, statusCodes: newValue, urlErrorCodes: retryable.urlErrorCodes) }
    }
    /// The `URLError` codes worth trying again (read from a ``TransportError`` or a bare
    /// `URLError`). By default the transport failures that are usually gone on the next attempt:
    /// `timedOut`, `networkConnectionLost`, `cannotConnectToHost`, `notConnectedToInternet`,
    /// `dnsLookupFailed` and `cannotFindHost`. To add to a default set, change it on a policy:
    /// `policy.retryableStatusCodes.insert(429)`.
    public var retryableURLErrorCodes: Set<URLError.Code> {
        get { retryable.urlErrorCodes }
        set { retryable = Retryable(methods: retryable.methods, statusCodes: retryable.statusCodes, urlErrorCodes: newValue) }
    }
    /// The three sets, in one immutable object shared by every copy of the policy: a policy is
    /// copied into every subscription of `retry(_:)`, and one reference costs one retain where
    /// three sets would cost three. Setting a set makes a new object (copy on write).
    private var retryable: Retryable

    private final class Retryable: Sendable {
        let methods: Set<HTTPMethod>
        let statusCodes: Set<Int>
        let urlErrorCodes: Set<URLError.Code>

        init(methods: Set<HTTPMethod>, statusCodes: Set<Int>, urlErrorCodes: Set<URLError.Code>) {
            self.methods = methods
            self.statusCodes = statusCodes
            self.urlErrorCodes = urlErrorCodes
        }

        /// The default sets, made once.
        static let defaults = Retryable(
            methods: RetryPolicy.defaultRetryableMethods,
            statusCodes: RetryPolicy.defaultRetryableStatusCodes,
            urlErrorCodes: RetryPolicy.defaultRetryableURLErrorCodes
        )
    }
    /// A budget shared with other policies (one per client): a retry it refuses fails with
    /// ``RetryBudgetExhausted``. `nil`: no budget. Retries and refusals are reported to the
    /// monitors of the client that sent the request (see ``HTTPEvent/Kind/retryScheduled(attempt:delay:failure:)``):
    /// neither the policy nor the budget needs to know the client.
    public var budget: RetryBudget?

    /// Creates a policy. The defaults: 3 attempts, 0.5 s base, ×2, 30 s max, full jitter,
    /// Retry-After honoured up to 60 s, idempotent methods only, system randomness. A set left
    /// `nil` is the default one (see ``retryableMethods``, ``retryableStatusCodes`` and
    /// ``retryableURLErrorCodes``).
    public init(
        maxAttempts: Int = 3,
        baseDelay: Duration = .milliseconds(500),
        multiplier: Double = 2,
        maxDelay: Duration = .seconds(30),
        jitter: Jitter = .full,
        maxWait: Duration = .seconds(60),
        retryNonIdempotent: Bool = false,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        budget: RetryBudget? = nil,
        retryableMethods: Set<HTTPMethod>? = nil,
        retryableStatusCodes: Set<Int>? = nil,
        retryableURLErrorCodes: Set<URLError.Code>? = nil
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.maxWait = maxWait
        self.retryNonIdempotent = retryNonIdempotent
        self.random = random
        self.budget = budget
        let methods = retryableMethods ?? Self.defaultRetryableMethods
        let statusCodes = retryableStatusCodes ?? Self.defaultRetryableStatusCodes
        let urlErrorCodes = retryableURLErrorCodes ?? Self.defaultRetryableURLErrorCodes
        if methods == Self.defaultRetryableMethods, statusCodes == Self.defaultRetryableStatusCodes,
           urlErrorCodes == Self.defaultRetryableURLErrorCodes {
            retryable = .defaults
        } else {
            retryable = Retryable(methods: methods, statusCodes: statusCodes, urlErrorCodes: urlErrorCodes)
        }
    }

    /// The methods retried by default: those RFC 9110 §9.2.2 calls idempotent, for which sending
    /// the request twice has the effect of sending it once.
    static let defaultRetryableMethods: Set<HTTPMethod> = [
        .get,  // safe: reads only
        .head,  // safe: reads only the head
        .options,  // safe: asks what the server supports
        "TRACE",  // safe: echoes the request
        .put,  // idempotent: replaces the resource with the same representation each time
        .delete,  // idempotent: the resource is gone after the first and after the second
    ]

    /// The HTTP status codes retried by default: the ones that say the failure is temporary.
    static let defaultRetryableStatusCodes: Set<Int> = [
        408,  // Request Timeout: the server gave up waiting for the request; a new one may arrive in time
        500,  // Internal Server Error: often a passing fault on one server of many
        502,  // Bad Gateway: a proxy could not reach the server, which may be back in a moment
        503,  // Service Unavailable: overloaded or in maintenance; its Retry-After says when to come back
        504,  // Gateway Timeout: a proxy gave up waiting for the server
    ]

    /// The `URLError` codes retried by default: the transport failures that are usually gone on
    /// the next attempt.
    static let defaultRetryableURLErrorCodes: Set<URLError.Code> = [
        .timedOut,  // no answer in time: the network or the server was slow
        .networkConnectionLost,  // the connection dropped mid-exchange (a Wi-Fi or cellular hand-over)
        .cannotConnectToHost,  // refused: the server may be restarting; the request never reached it
        .notConnectedToInternet,  // offline for now; the request never left the device
        .dnsLookupFailed,  // the name did not resolve this time; the request never left the device
        .cannotFindHost,  // the host name was not found this time; the request never left the device
    ]

    /// The `URLError` codes that mean no connection was made, so the request never reached the
    /// server and sending it again is safe whatever its method.
    static let neverReachedServerCodes: Set<URLError.Code> = [
        .cannotConnectToHost, .notConnectedToInternet, .dnsLookupFailed, .cannotFindHost,
    ]

    /// The back-off ceiling before retry number `retry` (1 for the first retry):
    /// `min(maxDelay, baseDelay × multiplier^(retry−1))`, never negative, never longer than
    /// about 285 years (however large the delays or the multiplier).
    package func ceiling(beforeRetry retry: Int) -> Duration {
        ScheduledSubscription.duration(seconds: ceilingSeconds(beforeRetry: retry))
    }

    /// The jittered back-off before retry number `retry` (1 for the first retry). Calls
    /// ``random`` once (unless the jitter is ``Jitter/none``).
    package func backoff(beforeRetry retry: Int) -> Duration {
        ScheduledSubscription.duration(seconds: backoffSeconds(beforeRetry: retry))
    }

    /// ``ceiling(beforeRetry:)`` in seconds: the arithmetic is done on `Double`, which saturates
    /// instead of overflowing.
    private func ceilingSeconds(beforeRetry retry: Int) -> Double {
        let exponent = Double(max(0, retry - 1))
        let raw = ScheduledSubscription.seconds(baseDelay) * pow(multiplier.isNaN ? 1 : max(0, multiplier), exponent)
        let cap = ScheduledSubscription.seconds(maxDelay)
        return raw.isNaN ? cap : min(cap, raw)
    }

    private func backoffSeconds(beforeRetry retry: Int) -> Double {
        let ceiling = ceilingSeconds(beforeRetry: retry)
        switch jitter {
        case .none: return ceiling
        case .full: return unitRandom() * ceiling
        case .equal: return ceiling / 2 + unitRandom() * ceiling / 2
        }
    }

    private func unitRandom() -> Double {
        let value = random()
        return value.isNaN ? 0 : min(1, max(0, value))
    }

    /// How long to wait before sending the request again after `error` ended attempt number
    /// `attempt` (1 for the first), or `nil` if it must not be retried.
    ///
    /// - Parameters:
    ///   - error: the failure of the attempt.
    ///   - attempt: the number of the attempt that failed, 1 for the first.
    ///   - method: the request's method, when the caller knows it. The method of the request in
    ///     an HTTP error's response takes precedence.
    public func retryDelay(after error: any Error, attempt: Int, method: HTTPMethod? = nil) -> Duration? {
        guard attempt < maxAttempts, isTransient(error) else { return nil }
        if !Self.neverReachedServer(error) && !retryNonIdempotent {
            guard let method = Self.method(of: error) ?? method, retryableMethods.contains(method) else { return nil }
        }
        let backoff = backoff(beforeRetry: attempt)
        if let serverError = error as? HTTPServerError, case .serviceUnavailable(let retryAfter?, _) = serverError {
            guard retryAfter <= maxWait else { return nil }
            return max(backoff, ScheduledSubscription.clamped(retryAfter))
        }
        return backoff
    }

    /// The method of the request an error belongs to: the request in an HTTP error's response
    /// (GET when the request names none), or the request of a ``TransportError``; `nil` when the
    /// error does not say.
    static func method(of error: any Error) -> HTTPMethod? {
        if let httpError = error as? any HTTPError, let request = httpError.response?.request {
            return HTTPMethod(rawValue: request.httpMethod ?? "GET")
        }
        if let transportError = error as? TransportError {
            return transportError.method
        }
        return nil
    }

    /// The `URLError` code of a transport failure: a ``TransportError``'s, or a bare `URLError`'s.
    static func urlErrorCode(of error: any Error) -> URLError.Code? {
        if let transportError = error as? TransportError { return transportError.code }
        return (error as? URLError)?.code
    }

    /// `true` for the failures worth trying again: an ``HTTPError`` whose status is in
    /// ``retryableStatusCodes``, or a transport failure (a ``TransportError`` or a bare
    /// `URLError`) whose code is in ``retryableURLErrorCodes``.
    public func isTransient(_ error: any Error) -> Bool {
        if let httpError = error as? any HTTPError {
            return retryableStatusCodes.contains(httpError.statusCode)
        }
        guard let code = Self.urlErrorCode(of: error) else { return false }
        return retryableURLErrorCodes.contains(code)
    }

    /// `true` for transport errors that mean the request never reached the server — no
    /// connection was made (`URLError.cannotConnectToHost`, `.notConnectedToInternet`,
    /// `.dnsLookupFailed`, `.cannotFindHost`; bare or wrapped in a ``TransportError``) — so
    /// sending it again is safe for every method.
    package static func neverReachedServer(_ error: any Error) -> Bool {
        guard let code = urlErrorCode(of: error) else { return false }
        return neverReachedServerCodes.contains(code)
    }
}
