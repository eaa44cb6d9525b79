import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The application-level owner of networking: one per app or per backend.
///
/// It is made from one ``Configuration``: the transport, the default headers (a `User-Agent`
/// among them), the event monitors, the rules every request follows (the response-size limit,
/// the total deadline, the redirect policy), the shared policies (rate limit, cooldowns,
/// coalescing, host failover), the credentials, and the one scheduler that times all of them.
/// Services conforming to ``RESTAPI`` send every request through their client.
///
/// ```swift
/// let client = HTTPClient {
///     $0.monitors = [Metrics()]
///     $0.rateLimiter = RateLimiter(requestsPerSecond: 20)
/// }
/// ```
///
/// Three ways to receive a response, all built on the transport's streamed parts:
/// - ``send(_:bodyFile:options:)`` buffers the body into one ``HTTPResponse``, bounded by
///   ``Configuration/maxResponseBytes`` (32 MiB unless set): a larger response fails with
///   ``ResponseTooLargeError`` as soon as that is known, and its transfer is cancelled;
/// - ``stream(_:bodyFile:options:)`` delivers the head and then each body chunk as it arrives;
/// - ``download(_:to:options:)`` writes the body to a file as it arrives, with progress, and
///   moves it into place only once it is complete.
public final class HTTPClient: Sendable {
    /// The client services use when they do not name one: the default ``Configuration`` (a
    /// ``URLSessionTransport`` and a `User-Agent` of `Transit`).
    public static let shared = HTTPClient()

    /// The limit of a buffered response body unless the client or the request sets another:
    /// 32 MiB (``Configuration/maxResponseBytes`` states it to users).
    @usableFromInline static let defaultMaxResponseBytes = 32 << 20

    /// The serial queue clients are timed on unless their ``Configuration/scheduler`` is another.
    ///
    /// Not `DispatchQueue.global()`: its threads are a fixed pool (one per core), and when work
    /// elsewhere blocks them, a deadline's action waits for a free thread. A serial queue of its
    /// own gets a thread even when that pool is busy, so deadlines fire on time.
    package static let timerQueue = DispatchQueue(label: "Transit.HTTPClient.timers")

    /// The total deadline of a buffered request unless the client or the request sets another:
    /// 300 seconds (``Configuration/deadline`` states it to users).
    static let defaultDeadline = Deadline.after(.seconds(300))

    /// The configuration the client was created with.
    public let configuration: Configuration

    /// The transport requests are sent with.
    let transport: any HTTPTransport
    /// The header fields added to every request that does not set them itself: the
    /// configuration's default headers and its user agent, in the order of their names.
    let defaultFields: [HTTPField]
    /// The monitors and the clock of their events; `nil` without monitors, so that nothing is
    /// built for them.
    let events: HTTPEventSink?
    /// The most body bytes ``send(_:bodyFile:options:)`` buffers (never negative).
    let maxResponseBytes: Int
    /// The total time a buffered request may take.
    let deadline: Deadline
    /// Which redirects are followed.
    let redirectPolicy: RedirectPolicy
    /// Header names (lowercased) dropped from a request redirected to another origin, beyond those
    /// ``Redaction`` treats as secret.
    let sensitiveHeaders: Set<String>
    /// The client's one clock: deadlines, the policies' waits and quarantines, events.
    let scheduler: any Scheduler
    /// The deadlines of the requests in flight, timed on ``scheduler``.
    let deadlines: Deadlines
    /// The client-side rate limit every attempt waits for, if any.
    let rateLimiter: RateLimiter?
    /// The shared cooldowns every attempt respects and every 429/503 with `Retry-After` starts,
    /// if any.
    let cooldowns: Cooldowns?
    /// Whether identical GET and HEAD requests in flight share one network request.
    let coalescesRequests: Bool
    /// The failover group of the client's origins, if any.
    let failover: HostFailover?
    /// The user-level credentials added to requests in their scope, renewed on 401, if any.
    let authorizer: (any Authorizer)?
    let coalescer = Coalescer()
    /// The first invalid default header, checked once: every request fails with it.
    private let defaultHeaderError: URLRequestError?

    /// Creates a client from `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        transport = configuration.transport
        var headers = configuration.defaultHeaders
        if let userAgent = configuration.userAgent,
           !headers.keys.contains(where: { $0.caseInsensitiveCompare("User-Agent") == .orderedSame }) {
            headers["User-Agent"] = userAgent
        }
        defaultFields = headers.sorted { $0.key < $1.key }.map { HTTPField(name: $0.key, value: $0.value) }
        defaultHeaderError = defaultFields.lazy.compactMap { URLRequest.checkHeader($0.name, $0.value) }.first
        scheduler = configuration.scheduler
        events = configuration.monitors.isEmpty ? nil : HTTPEventSink(monitors: configuration.monitors, scheduler: scheduler)
        maxResponseBytes = max(0, configuration.maxResponseBytes)
        deadline = configuration.deadline
        redirectPolicy = configuration.redirectPolicy
        sensitiveHeaders = Set(configuration.sensitiveHeaders.map { $0.lowercased() })
        deadlines = Deadlines(scheduler: scheduler)
        rateLimiter = configuration.rateLimiter
        cooldowns = configuration.cooldowns
        coalescesRequests = configuration.coalescesRequests
        failover = configuration.failover
        authorizer = configuration.authorizer
    }

    /// Creates a client sending with `transport` (``URLSessionTransport/shared`` unless given),
    /// with the default ``Configuration``.
    public convenience init(transport: any HTTPTransport = URLSessionTransport.shared) {
        self.init(configuration: Configuration(transport: transport))
    }

    /// Creates a client sending with `transport` (``URLSessionTransport/shared`` unless given),
    /// with the default ``Configuration`` changed by `configure` (which may throw: then so does
    /// this initialiser, and no client is made).
    ///
    /// ```swift
    /// let client = HTTPClient(transport: transport) {
    ///     $0.monitors = [log]
    ///     $0.scheduler = testScheduler
    /// }
    /// ```
    public convenience init(
        transport: any HTTPTransport = URLSessionTransport.shared,
        configure: (inout Configuration) throws -> Void
    ) rethrows {
        var configuration = Configuration(transport: transport)
        try configure(&configuration)
        self.init(configuration: configuration)
    }

    /// A signal that sends `request` (with the default headers added) when subscribed, and
    /// again on every subscription, and delivers the response buffered: one ``HTTPResponse``,
    /// whatever the status code, then `finished`.
    ///
    /// A default header is added only when the request does not set that header itself (names
    /// match case-insensitively), so a request can always override the client. A default header
    /// with an invalid name or value, or an invalid header or method in the request, fails the
    /// signal with ``URLRequestError`` and nothing is sent.
    ///
    /// - Parameters:
    ///   - request: the request; its `httpBody` is the body unless `bodyFile` is given.
    ///   - bodyFile: a file to upload as the body, streamed from disk.
    ///   - options: per-request limit, deadline and redirect policy.
    public func send(
        _ request: consuming URLRequest,
        bodyFile: URL? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Signal<HTTPResponse, any Error> {
        send(TransportRequest(request, bodyFile: bodyFile), options: options)
    }

    /// A signal that sends `request`, Transit's own request value, and delivers the response
    /// buffered: the one entry point every buffered request of a ``RESTAPI`` goes through, open
    /// to code that builds requests itself (a generated OpenAPI client's transport).
    ///
    /// Everything ``send(_:bodyFile:options:)`` guarantees holds: the default headers the request
    /// lacks are added, invalid fields fail the signal with ``URLRequestError`` before anything is
    /// sent, the client's policies, authoriser, monitors and transport apply, and the body is
    /// bounded by the client's (or `options`') response-size limit. The header fields go out in
    /// their order, repeated fields as many times as they are given (on a transport that sends
    /// them so). The body is `request.bodyFile` when set, else `request.body`; either can be sent
    /// again by a retry or a renewed credential.
    ///
    /// - Parameters:
    ///   - request: the method, URL, header fields and body.
    ///   - options: per-request limit, deadline and redirect policy.
    public func send(_ request: consuming TransportRequest, options: RequestOptions = RequestOptions()) -> Signal<HTTPResponse, any Error> {
        buffered(request, options: options)
    }

    /// The signal `build` makes for the sink of one request, reported to the monitors as that
    /// request: its sink is made where the signal is subscribed (the monitors capture their
    /// context there), or continued from the chain operator that subscribes again (see
    /// ``RequestContext``), to whose context it is attached; and the request ends once, with
    /// ``HTTPEvent/Kind/requestEnded(_:)``: completed at the value `endsWith` accepts (or at the
    /// end), failed, or cancelled. Only for a client with monitors.
    func observed<Output>(
        _ options: RequestOptions,
        endsWith isLast: @escaping @Sendable (Output) -> Bool,
        _ build: @escaping @Sendable (HTTPEventSink) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        let client = events!
        let operationName = options.operationName
        let scheduler = self.scheduler
        return Signal(subscribing: { observer, context in
            let chain = context[RequestContext.Key.self]
            let request = client.subscribedRequest(operationName: operationName, in: chain)
            chain?.attach(scheduler: scheduler, request: request)
            let generation = request.beginSubscription()
            let scope = CancellationToken(context: context)
            let ending = Locked(RequestEnding())
            build(request).observe(Observer { event in
                var ended: HTTPEvent.RequestOutcome?
                switch event {
                case .value(let value): ended = isLast(value) ? .completed(statusCode: nil) : nil
                case .finished: ended = .completed(statusCode: nil)
                case .failed(let error): ended = .failed(error)
                }
                ending.withLock { $0.willDeliver(ending: ended) }
                observer.send(event)
                if let end = ending.withLock({ $0.didDeliver(ending: ended) }) { request.endSubscription(generation, end) }
            }, in: scope)
            return {
                scope.cancel()
                if let end = ending.withLock({ $0.tearDown() }) { request.endSubscription(generation, end) }
            }
        })
    }

    /// `signal`, attaching the client's clock to the request context of the chain operator it is
    /// subscribed within, if any (see ``RequestContext``): a client without monitors, whose
    /// requests have no sink. No stage of its own.
    func attached<Output>(_ signal: Signal<Output, any Error>) -> Signal<Output, any Error> {
        let scheduler = self.scheduler
        return Signal(deferredWithContext: { context in
            context[RequestContext.Key.self]?.attach(scheduler: scheduler, request: nil)
            return signal
        })
    }

    /// The length of time `deadline` gives a request, as the client times it: clamped, never
    /// refused. A negative length is zero (the deadline has passed: the request fails with
    /// `URLError(.timedOut)` at the scheduler's next turn), and one longer than the longest wait
    /// the retry operators time (about 285 years) is that wait, so that adding it to the clock
    /// cannot overflow; `nil` for ``Deadline/unlimited``.
    static func timed(_ deadline: Deadline?) -> Duration? {
        deadline?.duration.map { min(max($0, .zero), ScheduledSubscription.duration(seconds: .infinity)) }
    }

    /// `body` for `request` with the authorizer's credentials added on every subscription, when
    /// the request is in its scope. Downloads only: a download does not renew on 401 (see
    /// `download(_:to:options:)`).
    private func withCredentials<Output>(
        _ request: TransportRequest,
        _ body: @escaping @Sendable (TransportRequest) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        guard let authorizer, let url = request.url, authorizer.scope.allows(url) else { return body(request) }
        return Signal(tryDeferred: { body(try Self.authorize(request, by: authorizer)) })
    }

    /// A signal that sends `request` and delivers its response as it arrives: the head, then
    /// each body chunk, then `finished`. Nothing is buffered, so memory stays bounded however
    /// large the body; the consumer must keep up (hash, parse or write each chunk and drop it).
    ///
    /// There is no size limit or deadline unless `options` sets one. Redirects are followed as
    /// for ``send(_:bodyFile:options:)``; only the final response's parts are delivered.
    public func stream(
        _ request: URLRequest,
        bodyFile: URL? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Signal<HTTPResponsePart, any Error> {
        stream(TransportRequest(request, bodyFile: bodyFile), options: options)
    }

    /// A signal that sends `request`, Transit's own request value, and delivers its response as
    /// it arrives: the head, then each body chunk, then `finished`.
    ///
    /// Everything ``stream(_:bodyFile:options:)`` guarantees holds (default headers, checks,
    /// policies, credentials renewed once on a 401, monitors, no size limit or deadline unless
    /// `options` sets one); the header fields go out in their order, repeated fields kept.
    ///
    /// - Parameters:
    ///   - request: the method, URL, header fields and body (`bodyFile` when set, else `body`).
    ///   - options: per-request limit, deadline and redirect policy.
    public func stream(_ request: TransportRequest, options: RequestOptions = RequestOptions()) -> Signal<HTTPResponsePart, any Error> {
        let streamed: @Sendable (HTTPEventSink?) -> Signal<HTTPResponsePart, any Error> = { events in
            let parts: @Sendable (TransportRequest) -> Signal<HTTPResponsePart, any Error> = { sent in
                let parts = self.parts(of: sent, options: options, deadline: Self.timed(options.deadline), events: events)
                return options.maxResponseBytes.map { parts.limitingBody(to: $0) } ?? parts
            }
            guard let authorizer = self.authorizer, let url = request.url, authorizer.scope.allows(url) else {
                return self.prepared(request, events: events, parts)
            }
            // Through the authorizer: each attempt's parts with the request it sent, so that a 401
            // from where the credentials went renews them and sends the request once more, as a
            // buffered request does; the first attempt's 401 and its body are then not delivered.
            return Self.authorized(request, by: authorizer, scheduler: self.scheduler, events: events) { request in
                self.prepared(request, events: events) { sent in parts(sent).map { AttemptPart($0, sent: sent) } }
            }
            .map(\.responsePart)
        }
        guard events != nil else { return attached(streamed(nil)) }
        return observed(options, endsWith: { _ in false }, streamed)
    }

    /// A signal that downloads the response body of `request` to the file `destination`.
    ///
    /// The body is written to a hidden temporary file in the destination's folder as it arrives;
    /// each write is reported as ``DownloadEvent/progress(_:)``. Once the body is complete the
    /// file is renamed to `destination` (replacing any file there) and
    /// ``DownloadEvent/completed(_:)`` is the last value. A partial body never appears under the
    /// destination's name. On cancellation, and on a failure that cannot be resumed, the temporary
    /// file is removed; an interrupted resumable transfer (`Accept-Ranges: bytes`, a strong `ETag`
    /// or a `Last-Modified`, a known length, no content coding) keeps it, and the next download of
    /// the same URL to the same destination — a retry, a new signal, a new process — continues it
    /// with `Range` and `If-Range` (see ``DownloadResumeData``).
    ///
    /// A response of 400 or more fails with its ``HTTPError`` (with the first 64 KiB of its
    /// body); another non-2xx status fails with `URLError(.badServerResponse)`. The client's
    /// authorizer adds its credentials but does not renew them on a 401 (the download's file
    /// belongs to its first answer): the 401 fails the download. There is no size limit or
    /// deadline unless `options` sets one.
    public func download(
        _ request: URLRequest,
        to destination: URL,
        options: RequestOptions = RequestOptions()
    ) -> Signal<DownloadEvent, any Error> {
        download(TransportRequest(request), to: destination, options: options)
    }

    /// ``download(_:to:options:)`` for a request Transit carries.
    func download(_ request: TransportRequest, to destination: URL, options: RequestOptions) -> Signal<DownloadEvent, any Error> {
        let transportWrites = transport.writesResponseBodiesToFiles
        let downloaded: @Sendable (HTTPEventSink?) -> Signal<DownloadEvent, any Error> = { events in
            self.withCredentials(request) { request in
                self.prepared(request, events: events) { sent in
                    DownloadWriter.signal(to: destination, request: sent, maxBytes: options.maxResponseBytes, transportWrites: transportWrites) { request, file in
                        var attempt = request
                        attempt.responseBodyFile = file
                        return self.parts(of: attempt, options: options, deadline: Self.timed(options.deadline), events: events)
                    }
                }
            }
        }
        guard events != nil else { return attached(downloaded(nil)) }
        return observed(options, endsWith: { if case .completed = $0 { true } else { false } }, downloaded)
    }

    /// `request` with the default headers, checked; `body` builds the signal for the prepared
    /// request, and the monitors are told about it.
    ///
    /// `request` is consumed so that, when the caller passes its last reference, adding the
    /// default headers changes its fields in place instead of copying them.
    func prepared<Output>(
        _ request: consuming TransportRequest,
        events: HTTPEventSink?,
        _ body: (TransportRequest) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        let sent: TransportRequest
        do {
            sent = try prepare(request)
        } catch {
            return Signal(error: error)
        }
        return monitored(body(sent), sent, events: events)
    }

    /// `request` with the default header fields it lacks, after its own: the request's own
    /// refusals first, then the client's, both before anything is sent (every field was checked
    /// once).
    ///
    /// - Throws: ``URLRequestError`` for a request that cannot be sent.
    func prepare(_ request: consuming TransportRequest) throws(URLRequestError) -> TransportRequest {
        var prepared = consume request
        if prepared.isMadeFromURLRequest {
            let (error, merged) = foundationDefaults(for: prepared)
            if let error { throw error }
            // Changed in place: the `URLRequest` is referenced only by `prepared` here (Linux
            // Foundation copies the whole request when changing a shared one).
            if let merged { prepared.changeURLRequest { $0.allHTTPHeaderFields = merged } }
        } else {
            let (error, missing) = defaultFields(missingFrom: prepared)
            if let error { throw error }
            if !missing.isEmpty { prepared.append(missing) }
        }
        return prepared
    }

    /// What ``prepare(_:)`` finds of a request made of its own fields before the authoriser's
    /// `Authorization` is set on it, which does not change at each attempt: the request's own
    /// refusal, or the client's, and the default fields it lacks (never `Authorization`, which
    /// the authoriser's value takes). `nil` for a request made from a `URLRequest`.
    func precheck(authorizing request: borrowing TransportRequest) -> AuthorizedPrecheck? {
        guard case .fields(let box) = request.form else { return nil }
        let (error, missing) = checkedDefaults(for: box.fields, authorizing: true)
        return AuthorizedPrecheck(error: error, missing: missing)
    }

    /// For a request Transit built: why it cannot be sent, or else the default fields it lacks.
    private func defaultFields(missingFrom request: borrowing TransportRequest) -> (URLRequestError?, [HTTPField]) {
        guard case .fields(let box) = request.form else { return (nil, []) }
        return checkedDefaults(for: box.fields, authorizing: false)
    }

    /// Why the fields `own` cannot be sent, or else the default fields they lack; without
    /// `Authorization` when the authoriser's value will take its place.
    private func checkedDefaults(for own: TransportRequest.Fields, authorizing: Bool) -> (URLRequestError?, [HTTPField]) {
        if let error = Self.validate(own) ?? defaultHeaderError { return (error, []) }
        return (nil, defaultFields.filter { field in
            !(authorizing && HTTPSyntax.sameFieldName(field.name, "Authorization"))
                && !own.headerFields.contains { HTTPSyntax.sameFieldName($0.name, field.name) }
        })
    }

    /// For a request made from a `URLRequest`: why it cannot be sent, or else its header
    /// dictionary with the default headers it lacks added (`nil` when it lacks none). Checked
    /// before any header is set: Foundation traps on a URL-less request and drops values with
    /// line breaks. The defaults are added in one assignment: each `setValue` would cost a copy of
    /// the header dictionary and a capitalisation pass in Linux Foundation.
    private func foundationDefaults(for request: borrowing TransportRequest) -> (URLRequestError?, [String: String]?) {
        guard case .foundation(let urlRequest) = request.form else { return (nil, nil) }
        let headers = urlRequest.allHTTPHeaderFields ?? [:]
        if let error = Self.validate(urlRequest, headers: headers) ?? defaultHeaderError { return (error, nil) }
        var merged: [String: String]?
        for field in defaultFields where !headers.keys.contains(where: { HTTPSyntax.sameFieldName($0, field.name) }) {
            if merged == nil { merged = headers }
            merged?[field.name] = field.value
        }
        return (nil, merged)
    }

    /// ``parts(of:options:)`` with the deadline (which includes the waits) enforced.
    func parts(
        of request: TransportRequest,
        options: RequestOptions,
        deadline: Duration?,
        events: HTTPEventSink?
    ) -> Signal<HTTPResponsePart, any Error> {
        let parts = parts(of: request, options: options, events: events)
        guard let deadline else { return parts }
        // The deadline's `URLError(.timedOut)` carries the request like a transport's would.
        return parts.within(deadline, deadlines: deadlines, for: request, events: events)
    }

    /// Delivers the parts of `request`'s final response to `observer`, observed in `scope`: as
    /// ``parts(of:options:events:)`` delivers them, but for a client with no cooldowns and no
    /// rate limit (nothing to wait for before sending) with no stage of its own between the
    /// caller's and the transport's.
    func exchange(
        _ request: TransportRequest,
        options: RequestOptions,
        events: HTTPEventSink?,
        observer: Observer<HTTPResponsePart, any Error>,
        in scope: CancellationToken
    ) {
        guard rateLimiter == nil, cooldowns == nil else {
            return parts(of: request, options: options, events: events).observe(observer, in: scope)
        }
        let marked = marked(request)
        redirecting(marked, options: options, events: events, onFinalHead: nil).start(marked, observer: observer, in: scope)
    }

    /// `request` carrying the client's own secrets, which the transports and their decorators
    /// (the HTTP cache) learn from it.
    private func marked(_ request: TransportRequest) -> TransportRequest {
        guard !sensitiveHeaders.isEmpty else { return request }
        var marked = request
        marked.sensitiveHeaders = sensitiveHeaders
        return marked
    }

    /// The redirecting exchange of `request` on the client's transport (the upload-counting one
    /// for a request whose body's progress is watched).
    private func redirecting(
        _ request: TransportRequest,
        options: RequestOptions,
        events: HTTPEventSink?,
        onFinalHead: (@Sendable (HTTPResponseHead) -> Void)?
    ) -> RedirectingExchange {
        RedirectingExchange(
            transport: request.bodyProgress == nil ? transport : UploadAttempts(base: transport), failover: failover, scheduler: scheduler,
            policy: options.redirectPolicy ?? redirectPolicy, sensitiveHeaders: sensitiveHeaders, events: events, onFinalHead: onFinalHead
        )
    }

    /// The parts of `request`'s final response: after the shared cooldown and the rate limit,
    /// redirects followed.
    func parts(
        of request: TransportRequest,
        options: RequestOptions,
        events: HTTPEventSink?
    ) -> Signal<HTTPResponsePart, any Error> {
        let scheduler = self.scheduler
        let request = marked(request)
        // The request a policy reports about, or records a cooldown's answer for.
        let sent: TransportRequest? = cooldowns != nil || (rateLimiter != nil && events != nil) ? request : nil
        // Each policy's key is computed once per request. A request that may go at once (a free
        // token, no cooldown: the common case) is subscribed directly; only one that must wait
        // goes through the permit or clearance signal.
        let cooldownKey = cooldowns?.key.key(for: request)
        var onFinalHead: (@Sendable (HTTPResponseHead) -> Void)?
        if let cooldowns, let cooldownKey, let sent {
            onFinalHead = { head in cooldowns.record(head, for: sent, key: cooldownKey, on: scheduler, events: events) }
        }
        var parts = redirecting(request, options: options, events: events, onFinalHead: onFinalHead).signal(request)
        if rateLimiter != nil || cooldownKey != nil {
            // One stage for both waits: the cooldown first, then the rate limit (a token is taken
            // only once the cooldown is over).
            let exchange = parts
            let permitted: @Sendable () -> Signal<HTTPResponsePart, any Error>
            if let rateLimiter {
                let key = if let cooldownKey, let cooldowns, rateLimiter.key.isSame(as: cooldowns.key) {
                    cooldownKey
                } else {
                    rateLimiter.key.key(for: request)
                }
                let waited = sent.flatMap { Self.rateLimitReport($0, to: events) }
                permitted = if rateLimiter.sharing == nil {
                    { Self.afterPermit(of: rateLimiter, key: key, on: scheduler, waited: waited, exchange) }
                } else {
                    // A fleet's limit: the store's grant, or its fallback.
                    { rateLimiter.sharedPermit(forKey: key, on: scheduler, waited: waited, events: events, request: sent).flatMap(maxConcurrent: 1) { _ in exchange } }
                }
            } else {
                permitted = { exchange }
            }
            let cooldowns = self.cooldowns
            parts = Signal(deferred: {
                guard let cooldowns, let cooldownKey, let sent, !cooldowns.isClear(forKey: cooldownKey, on: scheduler) else { return permitted() }
                return cooldowns.clearance(forKey: cooldownKey, on: scheduler, request: sent, events: events).flatMap(maxConcurrent: 1) { _ in permitted() }
            })
        }
        return parts
    }

    /// `exchange` once `rateLimiter` grants `key` a token: at once when one is free (no extra
    /// stage), else after waiting in its queue, timed by `scheduler` (`waited` is told how long).
    private static func afterPermit(
        of rateLimiter: RateLimiter,
        key: String,
        on scheduler: any Scheduler,
        waited: (@Sendable (String, Duration) -> Void)?,
        _ exchange: Signal<HTTPResponsePart, any Error>
    ) -> Signal<HTTPResponsePart, any Error> {
        if rateLimiter.acquireImmediately(forKey: key, on: scheduler) { return exchange }
        return rateLimiter.permit(forKey: key, on: scheduler, waited: waited).setFailureType().flatMap(maxConcurrent: 1) { _ in exchange }
    }

    /// What tells the monitors that `request` waited for the rate limiter; `nil` without monitors.
    private static func rateLimitReport(_ request: TransportRequest, to events: HTTPEventSink?) -> (@Sendable (String, Duration) -> Void)? {
        guard let events else { return nil }
        return { key, waited in events.emit(.rateLimitWaited(key: key, waited: waited), request: request) }
    }

    /// `signal`, reported to the monitors as ``HTTPEvent/Kind/requestStarted``,
    /// ``HTTPEvent/Kind/responseReceived(_:)`` and ``HTTPEvent/Kind/requestFailed(_:)``.
    private func monitored<Output>(_ signal: Signal<Output, any Error>, _ request: TransportRequest, events: HTTPEventSink?) -> Signal<Output, any Error> {
        guard let events else { return signal }
        let form = request.form
        return signal.handleEvents(
            receiveSubscription: { events.startRequest(form) },
            receiveValue: { value in
                if let response = value as? HTTPResponse {
                    events.noteStatus(response.statusCode)
                    events.emit(.responseReceived(response), form: form)
                }
            },
            receiveCompletion: { completion in
                if case .failure(let error) = completion {
                    events.emit(.requestFailed(error), form: form)
                }
            }
        )
    }
}

/// When one subscription of a monitored request ends it, and how: once the event that ends it
/// was passed on (so that an operator downstream that will subscribe again says so first,
/// ``HTTPEventSink/handOver()``, even when it cancels the subscription while handling it), or at
/// the teardown, as it ended or as cancelled, when no event is being passed on. The state machine
/// of ``HTTPClient/observed(_:endsWith:_:)`` and of a monitored ``BufferedExchange``; its driver
/// holds it under a lock and ends the request with what it returns, outside the lock.
struct RequestEnding {
    private var outcome: HTTPEvent.RequestOutcome?
    private var delivering = false
    private var tornDown = false

    /// An event is about to be passed on; `ended`: how it ends the request, if it does.
    mutating func willDeliver(ending ended: HTTPEvent.RequestOutcome?) {
        if outcome == nil { outcome = ended }
        delivering = true
    }

    /// The event was passed on: how the request ends now, if it does.
    mutating func didDeliver(ending ended: HTTPEvent.RequestOutcome?) -> HTTPEvent.RequestOutcome? {
        delivering = false
        return ended ?? (tornDown ? outcome ?? .cancelled : nil)
    }

    /// The subscription was torn down: how the request ends now, unless an event being passed on
    /// decides it.
    mutating func tearDown() -> HTTPEvent.RequestOutcome? {
        tornDown = true
        return delivering ? nil : outcome ?? .cancelled
    }
}

extension Signal where Output == HTTPResponsePart, Failure == any Error {
    /// The parts, failing with ``ResponseTooLargeError`` (and cancelling the transfer) once the
    /// body passes `maxBytes`.
    func limitingBody(to maxBytes: Int) -> Signal<HTTPResponsePart, any Error> {
        let parts = self
        return Signal { observer in
            let scope = CancellationToken()
            let received = Locked(0)
            parts.observe(Observer { event in
                switch event {
                case .value(.head(let head)) where head.expectedContentLength > maxBytes:
                    scope.cancel()
                    observer.fail(ResponseTooLargeError(limit: maxBytes, declaredLength: head.expectedContentLength))
                case .value(.body(let chunk)):
                    let total = received.withLock { $0 += chunk.count; return $0 }
                    guard total <= maxBytes else {
                        scope.cancel()
                        return observer.fail(ResponseTooLargeError(limit: maxBytes))
                    }
                    observer.send(event)
                default:
                    observer.send(event)
                }
            }, in: scope)
            return { scope.cancel() }
        }
    }
}

/// What preparing a request found before its credentials were added (``HTTPClient/precheck(authorizing:)``).
struct AuthorizedPrecheck: Sendable {
    /// The refusal of the request's own fields, or of the client's default headers.
    let error: URLRequestError?
    /// The default fields the request lacks, in the client's order.
    let missing: [HTTPField]
}
