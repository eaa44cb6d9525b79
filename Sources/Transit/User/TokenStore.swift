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
    public enum RefreshError: Error, Sendable, CustomStringConvertible {
        /// The refresh signal finished without a value.
        case noToken

        public var description: String {
            "TokenStore: the refresh signal finished without sending a token; make it send the new AuthToken."
        }
    }

    private struct Flight {
        var waiters: [UInt64: Observer<AuthToken, any Error>] = [:]
        var joined = 0
        /// Identifies the flight to the refresh's observer, which must not hold `subscription`
        /// (that would be a cycle through the refresh's own subscription).
        let id: UInt64
        let subscription = CancellationToken()
    }

    private struct State {
        var current: AuthToken
        var flight: Flight?
        var nextWaiterID: UInt64 = 0
        var nextFlightID: UInt64 = 0
    }

    private let state: Locked<State>
    private let refresh: Refresh
    private let onEvent: (@Sendable (Event) -> Void)?

    /// Creates a store.
    ///
    /// - Parameters:
    ///   - token: the credentials to start with.
    ///   - onEvent: told about every refresh decision, outside the store's lock, on the thread
    ///     that made it. Must return quickly.
    ///   - refresh: builds the signal that renews a token. See ``Refresh``.
    public init(
        token: AuthToken,
        onEvent: (@Sendable (Event) -> Void)? = nil,
        refresh: @escaping Refresh
    ) {
        state = Locked(State(current: token))
        self.refresh = refresh
        self.onEvent = onEvent
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
    public func authorize(_ request: URLRequest) -> URLRequest {
        var request = request
        request.setValue("Bearer \(current.accessToken)", forHTTPHeaderField: "Authorization")
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
        Signal { [self] observer in
            enum Decision { case current(AuthToken), start(UInt64, CancellationToken, AuthToken), join(Int) }
            let (id, decision) = state.withLock { state -> (UInt64, Decision) in
                let id = state.nextWaiterID
                if state.flight != nil {
                    state.nextWaiterID += 1
                    state.flight!.waiters[id] = observer
                    state.flight!.joined += 1
                    return (id, .join(state.flight!.joined))
                }
                if let staleAccessToken, staleAccessToken != state.current.accessToken {
                    return (id, .current(state.current))
                }
                state.nextWaiterID += 1
                let flight = Flight(waiters: [id: observer], joined: 1, id: state.nextFlightID)
                state.nextFlightID += 1
                state.flight = flight
                return (id, .start(flight.id, flight.subscription, state.current))
            }
            switch decision {
            case .current(let token):
                onEvent?(.alreadyRefreshed)
                observer.send(token)
                observer.finish()
                return nil
            case .join(let waiters):
                onEvent?(.refreshJoined(waiters: waiters))
            case .start(let flight, let subscription, let current):
                onEvent?(.refreshStarted)
                startRefresh(flight, replacing: current, in: subscription)
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
    private func startRefresh(_ flight: UInt64, replacing current: AuthToken, in subscription: CancellationToken) {
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

    /// Ends flight number `id` (once), stores the token and tells every waiter.
    private func complete(_ id: UInt64, with result: Result<AuthToken, any Error>) {
        let ended = state.withLock { state -> Flight? in
            guard let flight = state.flight, flight.id == id else { return nil }
            state.flight = nil
            if case .success(let token) = result { state.current = token }
            return flight
        }
        guard let ended else { return }
        ended.subscription.cancel()
        let waiters = ended.waiters.sorted { $0.key < $1.key }.map(\.value)
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
