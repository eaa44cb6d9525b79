import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One event in the lifecycle of a request sent by an ``HTTPClient``, delivered to its
/// ``HTTPEventMonitor``s.
///
/// ``time`` is the client's ``HTTPClient/Configuration/scheduler`` clock (virtual time under a
/// `TestScheduler`). ``request`` is the request the event is about, when there is one. The
/// ``description`` is redacted (see ``Redaction``) and safe to log.
///
/// **One request, one identity.** Every event about one request carries its ``requestID``
/// (unique within the client), its ``operationName`` and the ``context`` the monitor captured
/// where the request was subscribed (``HTTPEventMonitor/captureRequestContext()``). A request
/// begins with ``Kind/requestStarted`` and ends with exactly one ``Kind/requestEnded(_:)``,
/// whether it is buffered, streamed or downloaded. A request sent again by a Transit retry
/// operator (`retry(_:method:scheduler:)`, `respondToRateLimiting`, `retryWithFreshToken`) or by
/// the client's ``HTTPClient/Configuration/authorizer`` after a 401 stays the same request: its
/// new subscription reports ``Kind/requestStarted`` again under the same ``requestID``, and the
/// request ends once, after its last attempt.
public struct HTTPEvent: Sendable, CustomStringConvertible {
    /// What happened. New kinds may be added: switch with a `default:` case.
    public enum Kind: Sendable {
        // MARK: The request, as its caller sees it

        /// The client's signal was subscribed: the request (``HTTPEvent/request``, with every
        /// modifier and default header applied) is on its way, before any cooldown or rate-limit
        /// wait. Once per subscription, so once per retry of a chain.
        case requestStarted
        /// The client delivered a buffered response (``HTTPClient/send(_:bodyFile:options:)``),
        /// whatever its status code.
        case responseReceived(HTTPResponse)
        /// The request failed: a transport error, the deadline, a refused redirect, a cooldown
        /// that fails fast, a response too large, …
        case requestFailed(any Error)
        /// The request ended: the closing event, exactly one per ``HTTPEvent/requestID``, after
        /// every other event of the request (its retries by Transit's operators included).
        case requestEnded(RequestOutcome)

        // MARK: Each exchange with the transport

        /// One exchange with the transport starts: the first, every redirect hop, every retry,
        /// every failover attempt. ``HTTPEvent/request`` is the request exactly as handed to the
        /// transport (redirected URL, failover origin). `id` matches the
        /// ``HTTPAttemptMetrics/id`` of its ``attemptEnded(_:)``.
        case attemptStarted(id: UInt64)
        /// The exchange ended (completed, redirected, failed or cancelled), with what it sent and
        /// received and when. Exactly one per ``attemptStarted(id:)``; ``HTTPEvent/request`` is,
        /// as there, the request exactly as handed to the transport.
        case attemptEnded(HTTPAttemptMetrics)
        /// A redirect was followed: ``HTTPEvent/request`` got `status`, and `to` is sent next, as
        /// Transit's request value (its ``TransportRequest/urlRequest`` makes a `URLRequest`).
        /// `strippedHeaders` names the credential headers (`Authorization`, `Cookie`, the
        /// client's ``HTTPClient/Configuration/sensitiveHeaders``) dropped because the redirect leaves the
        /// origin; empty within one origin.
        case redirectFollowed(status: Int, to: TransportRequest, strippedHeaders: [String])

        // MARK: Waits

        /// The request waited `waited` in the client's ``RateLimiter`` queue for `key` before it
        /// was let through. Not sent for a request that went at once.
        case rateLimitWaited(key: String, waited: Duration)
        /// A `statusCode` answer (429 or 503) with `Retry-After` started, or extended, the shared
        /// cooldown of `key`: new requests to it wait `duration` (see ``Cooldowns``).
        case cooldownStarted(key: String, duration: Duration, statusCode: Int)
        /// The request waits `duration` for the shared cooldown of `key` to end before it is
        /// sent.
        case cooldownWait(key: String, duration: Duration)
        /// The cooldown of `key` has `remaining` to run, longer than its ``Cooldowns``' `maxWait`:
        /// the request fails at once with the answer that started it.
        case cooldownRefused(key: String, remaining: Duration)

        // MARK: Retries

        /// `Signal.retry(_:method:scheduler:)` (or `respondToRateLimiting`) will send the request
        /// again after `delay`, because attempt number `attempt` (1 for the first) failed with
        /// `failure` (an ``HTTPError`` — its status code says why — or a ``TransportError``).
        case retryScheduled(attempt: Int, delay: Duration, failure: any Error)
        /// The policy would have retried `failure` (the failure of attempt number `attempt`),
        /// but the ``RetryBudget`` is spent: the request fails with ``RetryBudgetExhausted``.
        case retryRefusedByBudget(attempt: Int, failure: any Error)

        // MARK: Host failover

        /// A connection-level failure put `origin` (`scheme://host:port`) of the client's
        /// ``HostFailover`` in quarantine for `duration`.
        case hostQuarantined(origin: String, duration: Duration, error: URLError)
        /// The request moves from the failed origin `from` to `to`.
        case failover(from: String, to: String, error: URLError)
        /// `origin`'s quarantine is over and a request goes to it again. Reported by the first
        /// request planned after the quarantine ended (quarantines end by the clock, not by an
        /// event).
        case hostRecovered(origin: String)

        // MARK: Credential renewal (the client's authorizer, or `retryWithFreshToken`)

        /// A 401 to credentials an ``Authorizer`` added started their renewal (a ``TokenStore``'s
        /// refresh, or another authorizer's ``Authorizer/renewCredentials(after:scheduler:)``).
        case credentialRenewalStarted
        /// A 401 joined the renewal already running; `waiters` counts every request waiting
        /// (an authorizer that shares its renewals reports it: a ``TokenStore`` does).
        case credentialRenewalJoined(waiters: Int)
        /// A 401 to credentials older than the authorizer's current ones (they were renewed while
        /// the request was in flight): the request is sent again with the current ones, without a
        /// renewal.
        case credentialsAlreadyRenewed
        /// The renewal delivered new credentials; `sharedBy` requests waited for it. The request
        /// is sent again, once. The credentials are not in the event.
        case credentialRenewalSucceeded(sharedBy: Int)
        /// The renewal ended without new credentials (static credentials, as
        /// ``BasicCredentials``, cannot be renewed): the 401 is the answer.
        case credentialRenewalDeclined
        /// The renewal failed with `error` (a ``TokenStore``'s refresh request failed, or passed
        /// its deadline: ``TokenStore/RefreshError/timedOut``), which the waiting requests fail
        /// with.
        case credentialRenewalFailed(any Error, sharedBy: Int)
        /// The authorizer refused to renew: for a ``TokenStore``, the renewal was re-entrant
        /// (``TokenStore/RefreshError/reentrantRefresh``: the refresh's own request got 401 and
        /// asked the same store) or over its limits
        /// (``TokenStore/RefreshError/tooManyRefreshes``).
        case credentialRenewalRefused(any Error, sharedBy: Int)

        // MARK: Coalescing

        /// The request joined an identical one in flight instead of sending its own
        /// (``HTTPClient/Configuration/coalescesRequests``); `subscribers` now share it.
        case coalescedRequestJoined(subscribers: Int)

        // MARK: Policy store

        /// A call to the ``PolicyStore`` of a ``PolicySharing`` failed with `error` (or missed its
        /// deadline) while the store was available: it is skipped for `quarantine`, and the
        /// policies keep to their fallback (``PolicySharing/fallback``) until it answers again.
        case policyStoreLost(error: any Error, quarantine: Duration)
        /// The ``PolicyStore`` answered again, `after` it was lost: the policies share their
        /// limits through it again.
        case policyStoreRestored(after: Duration)
    }

    /// How a request ended (``Kind/requestEnded(_:)``).
    public enum RequestOutcome: Sendable {
        /// The response arrived whole: a buffered response delivered, a stream or a download
        /// finished. `statusCode` is the final response's status (after redirects), whatever it
        /// is; `nil` only when no head was seen (a request that joined another in flight and
        /// ended without its response).
        case completed(statusCode: Int?)
        /// The request failed with `error` (after the retries of Transit's operators, if any).
        case failed(any Error)
        /// The subscription was cancelled before the end (by the caller, or by an operator
        /// downstream that stopped reading, such as a `prefix` on a stream).
        case cancelled
    }

    /// What happened.
    public let kind: Kind
    /// The request the event is about, as Transit carries it, when there is one (none for a
    /// shared token refresh's outcome and for failover events): its ``TransportRequest/method``,
    /// ``TransportRequest/url`` and ``TransportRequest/headerFields`` are read without making a
    /// `URLRequest`. (Its body file, response body file and progress are not kept.)
    public var transportRequest: TransportRequest? { sentForm.map { TransportRequest(form: $0) } }
    /// What the request is made of: one reference, so that an event copied to every monitor
    /// copies no more than a `URLRequest` would.
    let sentForm: TransportRequest.Form?
    /// The request the event is about as a Foundation `URLRequest`, made when read (each read
    /// makes one for a request Transit built): read ``transportRequest`` where its fields do.
    public var request: URLRequest? { transportRequest?.urlRequest }
    /// When it happened, on the client's scheduler.
    public let time: Duration
    /// The identity of the request this event belongs to, unique within the client: the same on
    /// every event of one request, from ``Kind/requestStarted`` to ``Kind/requestEnded(_:)``.
    /// `nil` only for an event reported outside any request. (A token refresh's outcome is
    /// reported once per client, with the first of its requests that waited for it.)
    public let requestID: UInt64?
    /// On ``Kind/attemptStarted(id:)`` and ``Kind/attemptEnded(_:)``: how many attempts of this
    /// request came before this one (OpenTelemetry's `http.request.resend_count`): 0 for the
    /// first, one more for each redirect hop, failover attempt, credential resend and retry.
    /// `nil` on other events.
    public let resendCount: Int?
    /// The request's ``RequestOptions/operationName``, when it has one.
    public let operationName: String?
    /// The value this monitor returned from ``HTTPEventMonitor/captureRequestContext()`` when the
    /// request was subscribed (each monitor gets back its own); `nil` when it returned none.
    public let context: (any Sendable)?

    /// Creates an event.
    init(
        kind: Kind, form: TransportRequest.Form?, time: Duration,
        requestID: UInt64? = nil, resendCount: Int? = nil, operationName: String? = nil, context: (any Sendable)? = nil
    ) {
        self.kind = kind
        sentForm = form
        self.time = time
        self.requestID = requestID
        self.resendCount = resendCount
        self.operationName = operationName
        self.context = context
    }

    /// A one-line, redacted rendering: URLs without user-info or secret query values, header
    /// names only, errors with their URLs redacted; never a token.
    public var description: String {
        let target = transportRequest.map(Self.describe) ?? ""
        let subject = target.isEmpty ? "" : " \(target)"
        switch kind {
        case .requestStarted:
            return "request started:\(subject)"
        case .responseReceived(let response):
            return "response \(response.statusCode):\(subject)"
        case .requestFailed(let error):
            return "request failed:\(subject): \(Self.describe(error))"
        case .requestEnded(.completed(let statusCode)):
            return "request ended \(statusCode.map(String.init) ?? "?"):\(subject)"
        case .requestEnded(.failed(let error)):
            return "request ended, failed:\(subject): \(Self.describe(error))"
        case .requestEnded(.cancelled):
            return "request ended, cancelled:\(subject)"
        case .attemptStarted(let id):
            return "attempt #\(id) started:\(subject)"
        case .attemptEnded(let metrics):
            return "attempt #\(metrics.id) \(metrics.summary):\(subject)"
        case .redirectFollowed(let status, let next, let stripped):
            var text = "redirect \(status) followed:\(subject) → \(Self.describe(next))"
            if !stripped.isEmpty { text += " (dropped \(stripped.joined(separator: ", ")))" }
            return text
        case .rateLimitWaited(let key, let waited):
            return "rate limit: waited \(Self.seconds(waited)) for \(Redaction.redact(urlString: key)):\(subject)"
        case .cooldownStarted(let key, let duration, let status):
            return "cooldown of \(Self.seconds(duration)) started for \(Redaction.redact(urlString: key)) by a \(status):\(subject)"
        case .cooldownWait(let key, let duration):
            return "cooldown: waiting \(Self.seconds(duration)) for \(Redaction.redact(urlString: key)):\(subject)"
        case .cooldownRefused(let key, let remaining):
            return "cooldown of \(Redaction.redact(urlString: key)) has \(Self.seconds(remaining)) left, longer than the client waits:\(subject)"
        case .retryScheduled(let attempt, let delay, let failure):
            return "retry in \(Self.seconds(delay)) after attempt \(attempt) failed (\(Self.describe(failure))):\(subject)"
        case .retryRefusedByBudget(let attempt, let failure):
            return "retry refused by the retry budget after attempt \(attempt) failed (\(Self.describe(failure))):\(subject)"
        case .hostQuarantined(let origin, let duration, let error):
            return "host \(origin) quarantined for \(Self.seconds(duration)) (URLError \(error.code.rawValue))"
        case .failover(let from, let to, let error):
            return "failover from \(from) to \(to) (URLError \(error.code.rawValue))"
        case .hostRecovered(let origin):
            return "host \(origin) recovered"
        case .credentialRenewalStarted:
            return "credential renewal started:\(subject)"
        case .credentialRenewalJoined(let waiters):
            return "credential renewal joined (\(waiters) waiting):\(subject)"
        case .credentialsAlreadyRenewed:
            return "credentials already renewed: sending again with the current ones:\(subject)"
        case .credentialRenewalSucceeded(let sharedBy):
            return "credential renewal succeeded (shared by \(sharedBy)): sending again:\(subject)"
        case .credentialRenewalDeclined:
            return "credential renewal declined (no new credentials): the 401 is the answer:\(subject)"
        case .credentialRenewalFailed(let error, let sharedBy):
            return "credential renewal failed (shared by \(sharedBy)):\(subject): \(Self.describe(error))"
        case .credentialRenewalRefused(let reason, let sharedBy):
            return "credential renewal refused (shared by \(sharedBy)):\(subject): \(Self.describe(reason))"
        case .coalescedRequestJoined(let subscribers):
            return "joined an identical request in flight (\(subscribers) sharing it):\(subject)"
        case .policyStoreLost(let error, let quarantine):
            return "policy store lost (\(Self.describe(error))): limits kept locally for \(Self.seconds(quarantine)):\(subject)"
        case .policyStoreRestored(let after):
            return "policy store restored after \(Self.seconds(after)): limits shared again:\(subject)"
        }
    }

    /// `METHOD redacted-URL`.
    static func describe(_ request: TransportRequest) -> String {
        "\(request.method.rawValue) \(request.url?.redactedForLogging ?? "<no URL>")"
    }

    /// An error in words, without credentials: an HTTP error by its status line only (its body
    /// is not shown), anything else by its description with URLs redacted.
    static func describe(_ error: any Error) -> String {
        if let httpError = error as? any HTTPError {
            return "HTTP \(httpError.statusCode) \(httpError.reasonPhrase)"
        }
        return Redaction.redactingURLs(in: String(describing: error))
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f s", duration.timeInterval)
    }
}

/// What one exchange with the transport sent and received, and when: SPTDataLoader's
/// consumption observer, for every attempt (each redirect hop, retry and failover attempt), not
/// just the last.
///
/// **Bytes.** `URLSession` does not expose the bytes on the wire, so the head sizes are the
/// HTTP/1.1 serialisation of what Transit handed to the transport and what it received:
/// - sent: the request line (`GET /path?query HTTP/1.1\r\n`), a `Host` line (unless the request
///   sets one), every header line (`Name: value\r\n`), a `Content-Length` line for a body (unless
///   set), the blank line; then the body (`httpBody`, or the size of the body file). Headers the
///   URL loading system adds on its own (`Accept-Encoding`, `Connection`, …) are not counted;
/// - received: the status line (`HTTP/1.1 200 OK\r\n`, with the standard reason phrase), every
///   header line of the response (a repeated field once per time it came, when the transport
///   keeps them: see ``HTTPResponseHead/fields``), the blank line; then every body byte delivered (after content
///   decoding, as `URLSession` delivers them). A redirect's body is never read: it counts 0.
///
/// **Timings** are read from the client's ``HTTPClient/Configuration/scheduler`` (so a `TestScheduler` gives
/// virtual, deterministic timings): when the exchange was subscribed, when its head arrived,
/// when it ended. Totals and spans are sums and differences of these fields: the bytes sent are
/// `Int64(sentHeadBytes) + sentBodyBytes`, the time to the head `headAt - startedAt`, the
/// exchange's duration `endedAt - startedAt`.
public struct HTTPAttemptMetrics: Sendable {
    /// How the exchange ended.
    public enum Outcome: Sendable {
        /// The whole response arrived.
        case completed
        /// The head was a redirect that the client followed; the body was not read.
        case redirected
        /// The transport failed (a ``TransportError``), possibly after the head.
        case failed(any Error)
        /// The subscription was cancelled before the end (by the caller, a deadline, a response
        /// over the size limit, or a coalesced request whose last subscriber left).
        case cancelled
    }

    /// Identifies the attempt within its client; the same as its
    /// ``HTTPEvent/Kind/attemptStarted(id:)``.
    public let id: UInt64
    /// The response head (status line and header fields as received), if one arrived.
    public let head: HTTPResponseHead?
    /// The request line, header lines and blank line, as HTTP/1.1 serialises them.
    public let sentHeadBytes: Int
    /// The request body: `httpBody`'s size or the body file's.
    public let sentBodyBytes: Int64
    /// The status line, header lines and blank line of the response, as HTTP/1.1 serialises
    /// them; 0 if no head arrived.
    public let receivedHeadBytes: Int
    /// The body bytes delivered by the transport.
    public let receivedBodyBytes: Int64
    /// When the exchange was subscribed, on the client's scheduler.
    public let startedAt: Duration
    /// When the head arrived, if it did.
    public let headAt: Duration?
    /// When the exchange ended.
    public let endedAt: Duration
    /// How it ended.
    public let outcome: Outcome

    /// Creates metrics.
    init(
        id: UInt64, head: HTTPResponseHead?,
        sentHeadBytes: Int, sentBodyBytes: Int64, receivedHeadBytes: Int, receivedBodyBytes: Int64,
        startedAt: Duration, headAt: Duration?, endedAt: Duration, outcome: Outcome
    ) {
        self.id = id
        self.head = head
        self.sentHeadBytes = sentHeadBytes
        self.sentBodyBytes = sentBodyBytes
        self.receivedHeadBytes = receivedHeadBytes
        self.receivedBodyBytes = receivedBodyBytes
        self.startedAt = startedAt
        self.headAt = headAt
        self.endedAt = endedAt
        self.outcome = outcome
    }

    /// `ended 200 (sent 120 B, received 345 B, head after 0.010 s, 0.020 s)`, without URLs.
    var summary: String {
        let statusCode = head?.statusCode
        let sentBytes = Int64(sentHeadBytes) + sentBodyBytes
        let receivedBytes = Int64(receivedHeadBytes) + receivedBodyBytes
        let timeToHead = headAt.map { $0 - startedAt }
        let duration = endedAt - startedAt
        let what: String = switch outcome {
        case .completed: "ended \(statusCode.map(String.init) ?? "?")"
        case .redirected: "redirected \(statusCode.map(String.init) ?? "?")"
        case .failed(let error): "failed (\(HTTPEvent.describe(error)))"
        case .cancelled: "cancelled" + (statusCode.map { " after a \($0) head" } ?? "")
        }
        var text = "\(what) (sent \(sentBytes) B, received \(receivedBytes) B"
        if let timeToHead { text += ", head after \(HTTPEvent.seconds(timeToHead))" }
        return text + ", \(HTTPEvent.seconds(duration)))"
    }
}
