import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Failure == any Error {
    /// On a 401 (``HTTPClientError/unauthorized(response:)``), renews the token through `store`
    /// and subscribes to the upstream again, once.
    ///
    /// Place it after ``catchHTTPErrors()``, with a request modifier that reads the store's token
    /// (``TokenStore/authorize(_:)``): the retried subscription runs the modifier again, so it
    /// sends the new token.
    ///
    /// ```swift
    /// api.get(endpoint: "me", modifier: store.authorize)
    ///     .catchHTTPErrors()
    ///     .retryWithFreshToken(from: store)
    /// ```
    ///
    /// - The refresh is shared: N requests failing together cause one refresh (see
    ///   ``TokenStore/freshToken(replacing:scheduler:)``). A request whose `Authorization: Bearer` token is
    ///   older than the store's current one replays at once, without a refresh.
    /// - Only a 401 to the store's token renews it: the request carried a bearer token, and it
    ///   reached the server that answered (no redirect to another origin dropped it; that server
    ///   is in the store's scope, or the request's own origin for a store made without one). A
    ///   401 from an origin a redirect led to, or to a request without a token, fails the signal
    ///   as it is: a host a redirect names cannot force refreshes or use up ``TokenStore/RefreshLimits``.
    ///   (A 401 made without a response, `HTTPClientError.unauthorized()`, renews.)
    /// - A 401 on the replayed request fails the signal with that 401: there is one retry.
    /// - A failed refresh fails the signal with the refresh's error.
    /// - Other errors and all values pass through untouched.
    /// - Cancelling while the refresh runs sends no further request and does not cancel the
    ///   refresh, which the store owns; other waiters still get its token.
    ///
    /// - A refresh whose own request is answered 401 and sent through this operator with the
    ///   same store (the refresh token was revoked) fails at once with
    ///   ``TokenStore/RefreshError/reentrantRefresh`` instead of waiting for itself; the store
    ///   stays usable.
    ///   Whether a request is part of a refresh is carried by its subscription (the
    ///   `SubscriptionContext`), not by the thread: it holds however the refresh's chain hops
    ///   between threads.
    /// - The refresh is reported (``HTTPEvent/Kind/credentialRenewalStarted`` and how it ended,
    ///   or ``HTTPEvent/Kind/credentialsAlreadyRenewed``) to the monitors of the client that answered
    ///   401, and the request sent again is the same request to them.
    ///
    /// **The clock.** A refresh this operator starts is timed by `scheduler`: its
    /// ``TokenStore/RefreshLimits/deadline`` and the store's refresh window. Unless given, it is
    /// the clock of the ``HTTPClient`` that answered 401 (its
    /// ``HTTPClient/Configuration/scheduler``), or the global dispatch queue for a signal that no
    /// client sends.
    public func retryWithFreshToken(
        from store: TokenStore,
        scheduler: (any Scheduler)? = nil
    ) -> Signal<Output, any Error> {
        retriedWithFreshToken(from: store, scheduler: scheduler)
    }

    /// The body of ``retryWithFreshToken(from:scheduler:)``.
    ///
    /// Compiled also for ``HTTPResponse``, the output it almost always has (it goes right after
    /// ``catchHTTPErrors()``): called from another module, a generic body asks the runtime for
    /// the metadata of every type that depends on `Output`, and the specialisation's entry check
    /// spares a request those look-ups.
    @_specialize(where Output == HTTPResponse)
    func retriedWithFreshToken(from store: TokenStore, scheduler: (any Scheduler)?) -> Signal<Output, any Error> {
        retryingWithFreshToken(from: store, scheduler: scheduler).withContext(RequestContext.joining)
    }

    /// Whether the 401 `response` answers the store's token: the request carried a bearer token,
    /// no redirect to another origin dropped it on the way, and the server that answered is the
    /// one it was sent to (in the store's scope, for a store made with one; else the request's
    /// own origin).
    private static func tokenReachedServer(_ response: HTTPResponse, store: TokenStore) -> Bool {
        TokenStore.bearerToken(in: response.request) != nil && response.answersCredentials(sentIn: store.credentialScope)
    }

    private func retryingWithFreshToken(from store: TokenStore, scheduler given: (any Scheduler)?) -> Signal<Output, any Error> {
        let upstream = self
        return catching { error, context -> Signal<Output, any Error> in
            guard let clientError = error as? HTTPClientError, case .unauthorized(let response) = clientError,
                  response.map({ Self.tokenReachedServer($0, store: store) }) ?? true
            else {
                return Signal(error: error)
            }
            // The subscription says whether this request is part of one of the store's refreshes,
            // and which client sent it (if it has monitors, they are told about the refresh).
            let ownRefresh = store.refresh(in: context)
            let request = RequestContext.of(context)
            let sending = request.request
            let fresh = store.freshToken(
                replacing: TokenStore.bearerToken(in: response?.request), scheduler: request.scheduler(given: given), fromRefresh: ownRefresh,
                events: sending
            )
            // The request is sent again as the same request (see `HTTPEventSink.handOver()`).
            sending?.handOver()
            return Signal(subscribing: { observer, context in
                let scope = CancellationToken(context: context)
                let waiting = scope.makeChild()
                fresh.observe(Observer { event in
                    switch event {
                    case .value:
                        // Stop waiting (releases this waiter), then send the request again.
                        waiting.cancel()
                        upstream.observe(observer, in: scope)
                    case .failed(let refreshError):
                        sending?.endIfUnclaimed(.failed(refreshError))
                        observer.fail(refreshError)
                    case .finished:
                        break
                    }
                }, in: waiting)
                return {
                    scope.cancel()
                    sending?.endIfUnclaimed(.cancelled)
                }
            })
        }
    }
}
