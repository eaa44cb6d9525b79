import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

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
/// - **Bounded.** A refresh fails after ``RefreshLimits/deadline``, and at most
///   ``RefreshLimits/maxRefreshes`` start per ``RefreshLimits/window``, timed by the scheduler
///   of whoever starts the refresh (see ``RefreshLimits``). A refresh whose own request is
///   answered 401 fails with ``RefreshError/reentrantRefresh`` instead of waiting for itself.
///
/// Observing: a refresh asked for by a client's request (through ``HTTPClient/Configuration/authorizer`` or
/// `retryWithFreshToken(from:scheduler:)`) is reported to that client's ``HTTPEventMonitor``s —
/// ``HTTPEvent/Kind/credentialRenewalStarted``, joined, succeeded, failed or refused, or
/// ``HTTPEvent/Kind/credentialsAlreadyRenewed`` — once per client however many of its requests
/// wait: the events every ``Authorizer``'s renewal reports.
///
/// Thread safety: all state is behind one `Locked`; the refresh closure, the refresh signal and
/// every observer run outside it. Any method may be called from any thread.
public final class TokenStore: Sendable {
    /// Builds the signal that renews the current token (see `init(token:scope:limits:refresh:)`).
    typealias Refresh = @Sendable (_ current: AuthToken) -> Signal<AuthToken, any Error>

    private let state: Locked<SingleFlight>
    private let refresh: Refresh
    /// Where the tokens may go through a client, if the store was given a scope.
    let credentialScope: CredentialScope?
    /// The deadline of a refresh and how many may start in a window.
    let limits: RefreshLimits

    /// Creates a store.
    ///
    /// - Parameters:
    ///   - token: the credentials to start with.
    ///   - scope: where the tokens may go when the store is a client's ``Authorizer``
    ///     (``HTTPClient/Configuration/authorizer``): hosts, https unless allowed otherwise. A store without
    ///     one authorises nothing through a client; `retryWithFreshToken(from:scheduler:)` then
    ///     renews only for the origin the request was sent to.
    ///   - limits: the deadline of a refresh and how many may start in a window.
    ///   - refresh: builds the signal that renews `current`, the token it is given. Its first value
    ///     becomes the current token; a failure fails every waiter; finishing without a value
    ///     fails them with ``RefreshError/noToken``. The signal is subscribed once per refresh,
    ///     by the store.
    public init(
        token: AuthToken,
        scope: CredentialScope? = nil,
        limits: RefreshLimits = RefreshLimits(),
        refresh: @escaping @Sendable (_ current: AuthToken) -> Signal<AuthToken, any Error>
    ) {
        state = Locked(SingleFlight(token: token))
        self.refresh = refresh
        self.limits = limits
        credentialScope = scope
    }

    /// The current credentials. Setting them replaces them (after a sign-in, say); a refresh
    /// already running still stores its result when it ends.
    public var current: AuthToken {
        get { state.withLock { $0.credential.token } }
        set {
            let credential = BearerCredential(newValue)
            state.withLock { $0.credential = credential }
        }
    }

    /// The current credentials as they are written into a request.
    var credential: BearerCredential {
        state.withLock { $0.credential }
    }

    /// `true` while a refresh is running: a snapshot, stale as soon as it is read. The
    /// ``HTTPEvent/Kind/credentialRenewalStarted`` and the events that end it report refreshes as they
    /// happen; the store's `description` shows it too.
    package var isRefreshing: Bool {
        state.withLock { $0.flight != nil }
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
        try state.withLock { $0.credential }.authorize(request)
    }

    /// The bearer token in `request`'s `Authorization` header, or `nil` if it has none.
    package static func bearerToken(in request: URLRequest?) -> String? {
        BearerCredential.token(in: request)
    }

    /// A signal that sends a token newer than `staleAccessToken`, then finishes.
    ///
    /// - If a refresh is running, the subscriber joins it, whatever token it names.
    /// - Otherwise, if `staleAccessToken` differs from the current access token, the token was
    ///   renewed since the request was sent: the current token is sent at once, without a
    ///   refresh.
    /// - Otherwise (the request used the current token, or `staleAccessToken` is `nil`: it had no
    ///   bearer token) a refresh starts, and the subscriber waits for it. Its deadline and the
    ///   refresh window are timed by `scheduler`.
    ///
    /// Cancelling the subscription stops waiting and never cancels the refresh.
    public func freshToken(
        replacing staleAccessToken: String?,
        scheduler: some Scheduler = DispatchQueue.transitGlobal
    ) -> Signal<AuthToken, any Error> {
        freshToken(replacing: staleAccessToken, scheduler: scheduler, fromRefresh: nil, events: nil)
    }

    /// ``freshToken(replacing:scheduler:)`` for a request that was subscribed by refresh number
    /// `ownFlight` of this store (see ``refreshBeingSubscribed``): if that refresh is still
    /// running, waiting for it would wait for itself, so the refresh fails with
    /// ``RefreshError/reentrantRefresh`` (and so does this request).
    ///
    /// `events` are the monitors of the client whose request asks (see ``HTTPEventSink``): they
    /// are told when this request starts or joins a refresh or gets the current token, and how
    /// the refresh ends.
    func freshToken(
        replacing staleAccessToken: String?,
        scheduler: any Scheduler,
        fromRefresh ownFlight: UInt64?,
        events: HTTPEventSink?
    ) -> Signal<AuthToken, any Error> {
        Signal { [self] observer in
            let (id, decision) = state.withLock {
                $0.ask(replacing: staleAccessToken, fromRefresh: ownFlight, observer: observer, events: events)
            }
            switch decision {
            case .reentrant(let flight):
                complete(flight, with: .failure(RefreshError.reentrantRefresh), alsoTelling: events)
                observer.fail(RefreshError.reentrantRefresh)
                return nil
            case .current(let token):
                events?.emit(.credentialsAlreadyRenewed)
                observer.send(token)
                observer.finish()
                return nil
            case .join(let waiters):
                events?.emit(.credentialRenewalJoined(waiters: waiters))
            case .start(let flight, let subscription, let current):
                startRefresh(flight, replacing: current, in: subscription, scheduler: scheduler, events: events)
            }
            // Strong on purpose: a waiter keeps the store (and so its refresh) alive. The cycle
            // through the flight's waiters ends when the refresh ends or the waiter is cancelled.
            return { self.removeWaiter(id) }
        }
    }

    private func removeWaiter(_ id: UInt64) {
        _ = state.withLock { $0.removeWaiter(id) }
    }

    /// Subscribes the refresh signal within `subscription`, which only the store's flight holds:
    /// releasing the store (when no waiter keeps it) releases and so cancels the refresh.
    ///
    /// The limits are enforced on `scheduler`'s clock. The refresh signal is subscribed with the
    /// flight marked in its context (see ``RefreshMarks``), so that a request of the refresh
    /// chain knows it belongs to this refresh, on whatever thread it is subscribed.
    ///
    /// `events` (the monitors of the client whose request started it) are told that it started,
    /// unless the limits refuse it.
    private func startRefresh(
        _ flight: UInt64,
        replacing current: AuthToken,
        in subscription: CancellationToken,
        scheduler: any Scheduler,
        events: HTTPEventSink?
    ) {
        let now = scheduler.now
        let allowed = state.withLock { $0.window.admit(at: now, limits: limits) }
        guard allowed else { return complete(flight, with: .failure(RefreshError.tooManyRefreshes)) }
        events?.emit(.credentialRenewalStarted)
        let timer = limits.scheduleDeadline(on: scheduler) { [weak self] in
            self?.complete(flight, with: .failure(RefreshError.timedOut))
        }
        guard subscription.add(timer) else { return timer.cancel() }
        markingRefresh(flight, refresh(current)).observe(Observer { [weak self] event in
            guard let self else { return }
            switch event {
            case .value(let token): self.complete(flight, with: .success(token))
            case .finished: self.complete(flight, with: .failure(RefreshError.noToken))
            case .failed(let error): self.complete(flight, with: .failure(error))
            }
        }, in: subscription)
    }

    /// Ends flight number `id` (once), stores the token and tells the monitors of the waiting
    /// clients and `extra` (the monitors of a re-entrant request that ended the flight), then
    /// every waiter.
    private func complete(_ id: UInt64, with result: Result<AuthToken, any Error>, alsoTelling extra: HTTPEventSink? = nil) {
        guard var ended = state.withLock({ $0.end(id, with: result) }) else { return }
        ended.subscription.cancel()
        ended.add(extra)
        ended.report(result)
        ended.deliver(result)
    }
}

/// A `TokenStore` prints its scope and whether a refresh is running, never its tokens.
extension TokenStore: CustomStringConvertible, CustomReflectable, RedactedReflection {
    /// `TokenStore(scope: …, refreshing: false)`.
    public var description: String {
        "TokenStore(scope: \(credentialScope.map { "\($0)" } ?? "none"), refreshing: \(isRefreshing))"
    }
}
