import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The credentials of one signed-in user: an access token, and what it takes to renew it.
///
/// `Codable` with the keys `accessToken`, `refreshToken` and `expiresAt`, so it can be decoded
/// from a token endpoint that uses them, or kept in a keychain.
public struct AuthToken: Sendable, Hashable, Codable {
    /// The token sent as `Authorization: Bearer <accessToken>`.
    public var accessToken: String
    /// The token the refresh closure trades for a new access token, if the server issued one.
    public var refreshToken: String?
    /// When the access token expires, if the server said so. Informational: Transit refreshes on
    /// 401, never by reading a clock (time only comes from schedulers).
    public var expiresAt: Date?

    /// Creates credentials.
    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// `true` if ``expiresAt`` is known and not after `date`.
    public func isExpired(at date: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= date
    }
}

/// The user-level owner of credentials: injects the current access token into requests and
/// renews it, single-flight, when the server answers 401.
///
/// ```swift
/// let store = TokenStore(token: AuthToken(accessToken: "a", refreshToken: "r")) { current in
///     auth.post(endpoint: "token", body: refreshBody(current.refreshToken))
///         .catchHTTPErrors()
///         .map(\.data)
///         .decode(AuthToken.self, decoder: JSONDecoder())
/// }
/// api.get(endpoint: "me", modifier: store.authorize)
///     .catchHTTPErrors()
///     .retryWithFreshToken(from: store)
/// ```
///
/// Guarantees:
/// - **Single flight.** However many requests ask for a fresh token while a refresh is running,
///   the refresh closure runs once and every one of them gets its result.
/// - **No needless refresh.** A request that was sent with an access token other than the
///   current one (the token was renewed while it was in flight) gets the current token at once,
///   without a refresh — unless a refresh is running, which means the current token is being
///   replaced too: then it waits for that refresh.
/// - **Shared failure.** A failed refresh fails every waiter with the refresh's error and leaves
///   ``current`` unchanged; the next 401 starts a new refresh.
/// - **The store owns the refresh.** A waiter that is cancelled just stops waiting; the refresh
///   goes on for the others, and its result is stored even if every waiter went away.
///
/// Monitors: a refresh asked for by a client's request (through `HTTPClient(authorizer:)` or
/// `retryWithFreshToken(from:)`) is reported to that client's ``HTTPEventMonitor``s — started,
/// joined, succeeded, failed or refused — once per client however many of its requests wait.
///
/// Thread safety: all state is behind one `Locked`; the refresh closure, the refresh signal and
/// every observer run outside it. Any method may be called from any thread.
public final class TokenStore: Sendable {
    /// Builds the signal that renews `current`. Its first value becomes the current token; a
    /// failure fails every waiter; finishing without a value fails them with
    /// ``RefreshError/noToken``. The signal is subscribed once per refresh, by the store.
    public typealias Refresh = @Sendable (_ current: AuthToken) -> Signal<AuthToken, any Error>

    /// What the store did, for logging and for examples that narrate it.
    public enum Event: Sendable {
        /// A request for a fresh token (a 401) started a refresh.
        case refreshStarted
        /// A waiter joined the refresh already running; `waiters` counts every waiter so far.
        case refreshJoined(waiters: Int)
        /// A request sent with an older token gets the current one without a refresh.
        case alreadyRefreshed
        /// The refresh succeeded; `sharedBy` is the number of waiters that asked for it.
        case refreshed(AuthToken, sharedBy: Int)
        /// The refresh failed; `sharedBy` waiters failed with `error`.
        case refreshFailed(any Error, sharedBy: Int)
    }

    /// The error of a refresh signal that finished without sending a token.
    public enum RefreshError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
        /// The refresh signal finished without a value.
        case noToken
        /// The refresh's own request was answered 401 and asked this store for a fresh token: it
        /// would wait for itself forever. The refresh (and every request waiting for it) fails
        /// with this error instead; the credentials cannot be renewed and the user must sign in
        /// again.
        case reentrantRefresh
        /// The refresh did not end within ``RefreshLimits/deadline``; it was cancelled.
        case timedOut
        /// More than ``RefreshLimits/maxRefreshes`` refreshes started within
        /// ``RefreshLimits/window``: the server keeps rejecting fresh tokens, so the store stops
        /// asking until the window has passed.
        case tooManyRefreshes

        public var description: String {
            switch self {
            case .timedOut:
                return "TokenStore: the token refresh did not complete within its deadline and was cancelled."
            case .tooManyRefreshes:
                return "TokenStore: too many token refreshes in a short time (the server keeps rejecting fresh tokens); "
                    + "not refreshing again until the window has passed."
            case .noToken:
                return "TokenStore: the refresh signal finished without sending a token; make it send the new AuthToken."
            case .reentrantRefresh:
                return "TokenStore: the token refresh was itself answered 401 Unauthorized and asked the same store for a "
                    + "fresh token, which would wait for itself. The refresh failed; sign the user in again."
            }
        }

        public var errorDescription: String? { description }
    }

    private struct Flight {
        var waiters: [UInt64: Observer<AuthToken, any Error>] = [:]
        var joined = 0
        /// Identifies the flight to the refresh's observer, which must not hold `subscription`
        /// (that would be a cycle through the refresh's own subscription).
        let id: UInt64
        let subscription = CancellationToken()
        /// The monitors of the clients whose requests wait for this refresh (each once).
        var sinks: [HTTPEventSink] = []

        mutating func add(_ sink: HTTPEventSink?) {
            guard let sink, !sinks.contains(where: { $0 === sink }) else { return }
            sinks.append(sink)
        }
    }

    /// Bounds on refreshing: a deadline per refresh, and how many refreshes may start in a window.
    public struct RefreshLimits: Sendable {
        /// The longest a refresh may take; then it fails with ``RefreshError/timedOut``. Clamped
        /// like a request's deadline: a negative one is zero, and one longer than about 285
        /// years is that.
        public var deadline: Duration
        /// How many refreshes may start within ``window``; more fail with
        /// ``RefreshError/tooManyRefreshes``.
        public var maxRefreshes: Int
        /// The window of ``maxRefreshes``.
        public var window: Duration
        /// The clock of the deadline and the window.
        public var scheduler: any Scheduler

        /// Creates limits: 30 s per refresh, at most 5 refreshes a minute by default.
        public init(
            deadline: Duration = .seconds(30),
            maxRefreshes: Int = 5,
            window: Duration = .seconds(60),
            scheduler: any Scheduler = DispatchQueue.global()
        ) {
            self.deadline = deadline
            self.maxRefreshes = max(1, maxRefreshes)
            self.window = window
            self.scheduler = scheduler
        }
    }

    private struct State {
        var current: AuthToken {
            didSet { bearerHeader = Self.bearerHeader(for: current) }
        }
        /// `Bearer <access token>`, or `nil` if the access token cannot be a header value: made
        /// once per token, not per request.
        private(set) var bearerHeader: String?
        var flight: Flight?
        /// When the recent refreshes started, on the limits' clock.
        var refreshStarts: [Duration] = []
        var nextWaiterID: UInt64 = 0
        var nextFlightID: UInt64 = 0

        init(current: AuthToken) {
            self.current = current
            bearerHeader = Self.bearerHeader(for: current)
        }

        /// The `Authorization` value for `token`: `nil` for an empty token or one with a space,
        /// a control character or DEL (a token read from a file with its newline would
        /// otherwise be dropped by Linux Foundation, and the request sent without it).
        static func bearerHeader(for token: AuthToken) -> String? {
            let value = token.accessToken
            guard HTTPSyntax.isBearerToken(value) else { return nil }
            return "Bearer \(value)"
        }
    }

    private let state: Locked<State>
    private let refresh: Refresh
    let credentialScope: CredentialScope?
    /// The deadline of a refresh and how many may start in a window.
    public let limits: RefreshLimits
    private let onEvent: (@Sendable (Event) -> Void)?

    /// Creates a store.
    ///
    /// - Parameters:
    ///   - token: the credentials to start with.
    ///   - onEvent: told about every refresh decision, outside the store's lock, on the thread
    ///     that made it. Must return quickly.
    ///   - limits: the deadline of a refresh and how many may start in a window.
    ///   - refresh: builds the signal that renews a token. See ``Refresh``.
    public init(
        token: AuthToken,
        onEvent: (@Sendable (Event) -> Void)? = nil,
        limits: RefreshLimits = RefreshLimits(),
        refresh: @escaping Refresh
    ) {
        state = Locked(State(current: token))
        self.refresh = refresh
        self.onEvent = onEvent
        self.limits = limits
        credentialScope = nil
    }

    /// Creates a store that can be attached to a client as its ``Authorizer``
    /// (`HTTPClient(authorizer:)`): its tokens go only to the hosts of `scope`.
    ///
    /// - Parameters:
    ///   - token: the credentials to start with.
    ///   - scope: where the tokens may go (hosts, https unless allowed otherwise).
    ///   - onEvent: told about every refresh decision.
    ///   - limits: the deadline of a refresh and how many may start in a window.
    ///   - refresh: builds the signal that renews a token. See ``Refresh``.
    public init(
        token: AuthToken,
        scope: CredentialScope,
        onEvent: (@Sendable (Event) -> Void)? = nil,
        limits: RefreshLimits = RefreshLimits(),
        refresh: @escaping Refresh
    ) {
        state = Locked(State(current: token))
        self.refresh = refresh
        self.onEvent = onEvent
        self.limits = limits
        credentialScope = scope
    }

    /// The current credentials.
    public var current: AuthToken {
        state.withLock { $0.current }
    }

    /// `true` while a refresh is running.
    public var isRefreshing: Bool {
        state.withLock { $0.flight != nil }
    }

    /// Replaces the credentials (after a sign-in, say). A refresh already running still stores
    /// its result when it ends.
    public func update(_ token: AuthToken) {
        state.withLock { $0.current = token }
    }

    /// A request modifier that sets `Authorization: Bearer <current access token>`. It reads the
    /// token when it runs, so a retried request carries the newest one:
    /// `api.get(endpoint: "me", modifier: store.authorize)`.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` when the token is empty or contains
    ///   whitespace or a control character (a token read from a file often ends with a newline;
    ///   Foundation on Linux would silently send the request without `Authorization`), or
    ///   ``URLRequestError/invalidURL`` for a request without a URL. Nothing is sent.
    public func authorize(_ request: URLRequest) throws -> URLRequest {
        guard let header = state.withLock({ $0.bearerHeader }) else { throw URLRequestError.invalidBearerToken }
        guard request.url != nil else { throw URLRequestError.invalidURL }
        var request = request
        request.setCheckedHeader(header, canonicalName: "Authorization")
        return request
    }

    /// The bearer token in `request`'s `Authorization` header, or `nil` if it has none.
    public static func bearerToken(in request: URLRequest?) -> String? {
        guard let value = request?.value(forHTTPHeaderField: "Authorization") else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        return String(trimmed.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    /// A signal that sends a token newer than `staleAccessToken`, then finishes.
    ///
    /// - If a refresh is running, the subscriber joins it, whatever token it names.
    /// - Otherwise, if `staleAccessToken` differs from the current access token, the token was
    ///   renewed since the request was sent: the current token is sent at once, without a
    ///   refresh.
    /// - Otherwise (the request used the current token, or `staleAccessToken` is `nil`: it had no
    ///   bearer token) a refresh starts, and the subscriber waits for it.
    ///
    /// Cancelling the subscription stops waiting and never cancels the refresh.
    public func freshToken(replacing staleAccessToken: String?) -> Signal<AuthToken, any Error> {
        freshToken(replacing: staleAccessToken, fromRefresh: nil)
    }

    /// ``freshToken(replacing:)`` for a request that was subscribed by refresh number
    /// `ownFlight` of this store (see ``refreshBeingSubscribed``): if that refresh is still
    /// running, waiting for it would wait for itself, so the refresh fails with
    /// ``RefreshError/reentrantRefresh`` (and so does this request).
    ///
    /// `events` are the monitors of the client whose request asks (see ``HTTPEventSink``): they
    /// are told when this request starts or joins a refresh, and how the refresh ends.
    func freshToken(
        replacing staleAccessToken: String?,
        fromRefresh ownFlight: UInt64?,
        events: HTTPEventSink? = nil
    ) -> Signal<AuthToken, any Error> {
        Signal { [self] observer in
            enum Decision { case current(AuthToken), start(UInt64, CancellationToken, AuthToken), join(Int), reentrant(UInt64) }
            let (id, decision) = state.withLock { state -> (UInt64, Decision) in
                let id = state.nextWaiterID
                if let ownFlight, state.flight?.id == ownFlight {
                    return (id, .reentrant(ownFlight))
                }
                if state.flight != nil {
                    state.nextWaiterID += 1
                    state.flight!.waiters[id] = observer
                    state.flight!.joined += 1
                    state.flight!.add(events)
                    return (id, .join(state.flight!.joined))
                }
                if let staleAccessToken, staleAccessToken != state.current.accessToken {
                    return (id, .current(state.current))
                }
                state.nextWaiterID += 1
                var flight = Flight(waiters: [id: observer], joined: 1, id: state.nextFlightID)
                flight.add(events)
                state.nextFlightID += 1
                state.flight = flight
                return (id, .start(flight.id, flight.subscription, state.current))
            }
            switch decision {
            case .reentrant(let flight):
                complete(flight, with: .failure(RefreshError.reentrantRefresh), alsoTelling: events)
                observer.fail(RefreshError.reentrantRefresh)
                return nil
            case .current(let token):
                onEvent?(.alreadyRefreshed)
                observer.send(token)
                observer.finish()
                return nil
            case .join(let waiters):
                onEvent?(.refreshJoined(waiters: waiters))
                events?.emit(.tokenRefreshJoined(waiters: waiters))
            case .start(let flight, let subscription, let current):
                onEvent?(.refreshStarted)
                startRefresh(flight, replacing: current, in: subscription, events: events)
            }
            // Strong on purpose: a waiter keeps the store (and so its refresh) alive. The cycle
            // through the flight's waiters ends when the refresh ends or the waiter is cancelled.
            return { self.removeWaiter(id) }
        }
    }

    private func removeWaiter(_ id: UInt64) {
        _ = state.withLock { state in state.flight?.waiters.removeValue(forKey: id) }
    }

    /// Subscribes the refresh signal within `subscription`, which only the store's flight holds:
    /// releasing the store (when no waiter keeps it) releases and so cancels the refresh.
    ///
    /// While the refresh signal is being subscribed (synchronously, on this thread), the store
    /// marks the thread with the flight, so that a `retryWithFreshToken(from: self)` inside the
    /// refresh chain knows it belongs to this refresh (``refreshBeingSubscribed``).
    ///
    /// `events` (the monitors of the client whose request started it) are told that it started,
    /// unless the limits refuse it.
    private func startRefresh(_ flight: UInt64, replacing current: AuthToken, in subscription: CancellationToken, events: HTTPEventSink?) {
        let now = limits.scheduler.now
        let allowed = state.withLock { state -> Bool in
            state.refreshStarts.removeAll { now - $0 >= limits.window }
            guard state.refreshStarts.count < limits.maxRefreshes else { return false }
            state.refreshStarts.append(now)
            return true
        }
        guard allowed else { return complete(flight, with: .failure(RefreshError.tooManyRefreshes)) }
        events?.emit(.tokenRefreshStarted)
        // Clamped as a request's deadline is: never so long that the clock would overflow.
        let timer = limits.scheduler.schedule(after: HTTPClient.timed(.after(limits.deadline)) ?? .zero) { [weak self] in
            self?.complete(flight, with: .failure(RefreshError.timedOut))
        }
        guard subscription.add(timer) else { return timer.cancel() }
        RefreshContext.during(RefreshContext(store: ObjectIdentifier(self), flight: flight)) {
            let signal = refresh(current)
            signal.observe(Observer { [weak self] event in
                guard let self else { return }
                switch event {
                case .value(let token): self.complete(flight, with: .success(token))
                case .finished: self.complete(flight, with: .failure(RefreshError.noToken))
                case .failed(let error): self.complete(flight, with: .failure(error))
                }
            }, in: subscription)
        }
    }

    /// The refresh of this store whose signal is being subscribed on the current thread, if
    /// any: a request subscribed now is part of that refresh.
    var refreshBeingSubscribed: UInt64? {
        RefreshContext.current.flatMap { $0.store == ObjectIdentifier(self) ? $0.flight : nil }
    }

    /// Ends flight number `id` (once), stores the token and tells every waiter, the monitors of
    /// their clients and `extra` (the monitors of a re-entrant request that ended the flight).
    private func complete(_ id: UInt64, with result: Result<AuthToken, any Error>, alsoTelling extra: HTTPEventSink? = nil) {
        let ended = state.withLock { state -> Flight? in
            guard let flight = state.flight, flight.id == id else { return nil }
            state.flight = nil
            if case .success(let token) = result { state.current = token }
            return flight
        }
        guard var ended else { return }
        ended.subscription.cancel()
        let waiters = ended.waiters.sorted { $0.key < $1.key }.map(\.value)
        ended.add(extra)
        if !ended.sinks.isEmpty {
            let report: HTTPEvent.Kind = switch result {
            case .success: .tokenRefreshSucceeded(sharedBy: ended.joined)
            case .failure(let error as RefreshError) where error == .reentrantRefresh || error == .tooManyRefreshes:
                .tokenRefreshRefused(error, sharedBy: ended.joined)
            case .failure(let error): .tokenRefreshFailed(error, sharedBy: ended.joined)
            }
            for sink in ended.sinks { sink.emit(report) }
        }
        switch result {
        case .success(let token):
            onEvent?(.refreshed(token, sharedBy: ended.joined))
            for waiter in waiters {
                waiter.send(token)
                waiter.finish()
            }
        case .failure(let error):
            onEvent?(.refreshFailed(error, sharedBy: ended.joined))
            for waiter in waiters { waiter.fail(error) }
        }
    }
}

/// Which refresh (of which store) the current thread is subscribing, kept in a thread-specific
/// slot for the duration of the synchronous subscription.
final class RefreshContext: Sendable {
    let store: ObjectIdentifier
    let flight: UInt64
    /// The context this one replaced (refreshes of different stores may nest).
    private let outer: RefreshContext?

    init(store: ObjectIdentifier, flight: UInt64, outer: RefreshContext? = nil) {
        self.store = store
        self.flight = flight
        self.outer = outer
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The innermost context of this thread.
    static var current: RefreshContext? {
        pthread_getspecific(key).map { Unmanaged<RefreshContext>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with `context` as this thread's current one (nested contexts are kept).
    static func during<R>(_ context: RefreshContext, _ body: () throws -> R) rethrows -> R {
        let outer = current
        let nested = RefreshContext(store: context.store, flight: context.flight, outer: outer)
        let retained = Unmanaged.passRetained(nested)
        pthread_setspecific(key, retained.toOpaque())
        defer {
            pthread_setspecific(key, outer.map { Unmanaged.passUnretained($0).toOpaque() })
            retained.release()
        }
        return try body()
    }
}

/// An `AuthToken` prints without its tokens: `print`, string interpolation, `debugPrint` and
/// `dump` show whether each token is there and its expiry, never a token's value.
extension AuthToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `AuthToken(accessToken: <redacted>, refreshToken: <redacted>, expiresAt: …)`.
    public var description: String {
        let refresh = refreshToken == nil ? "nil" : "<redacted>"
        let expiry = expiresAt.map { "\($0)" } ?? "nil"
        return "AuthToken(accessToken: <redacted>, refreshToken: \(refresh), expiresAt: \(expiry))"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The expiry and whether each token is there; the tokens stand redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": "<redacted>",
                "refreshToken": refreshToken == nil ? "nil" : "<redacted>",
                "expiresAt": expiresAt as Any,
            ],
            displayStyle: .struct
        )
    }
}

/// A `TokenStore` prints its scope and whether a refresh is running, never its tokens.
extension TokenStore: CustomStringConvertible, CustomReflectable {
    /// `TokenStore(scope: …, refreshing: false)`.
    public var description: String {
        "TokenStore(scope: \(credentialScope.map { "\($0)" } ?? "none"), refreshing: \(isRefreshing))"
    }

    /// The scope and whether a refresh is running; nothing of the tokens.
    public var customMirror: Mirror {
        Mirror(self, children: ["scope": credentialScope as Any, "refreshing": isRefreshing], displayStyle: .class)
    }
}
