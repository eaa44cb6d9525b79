import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// User-level credentials for an ``HTTPClient``: one object that both adds credentials to every
/// request in its ``scope`` and recovers from `401 Unauthorized` by renewing them and sending the
/// request once more (`HTTPClient(authorizer:)`), instead of a modifier and an operator written
/// into every chain. ``TokenStore`` is one.
public protocol Authorizer: Sendable {
    /// Where the credentials may go; a request outside it is sent without them.
    var scope: CredentialScope { get }
    /// `request` with the current credentials added. Throws (and nothing is sent) when they are
    /// not valid header values.
    func authorize(_ request: URLRequest) throws -> URLRequest
    /// A signal that sends one value once credentials newer than those `rejected` carried are
    /// available (renewing them if needed, shared with concurrent callers), or fails with the
    /// renewal's error.
    func renewCredentials(after rejected: URLRequest) -> Signal<Void, any Error>
    /// Called when a request's subscription starts: the function that renews the credentials
    /// if that request is answered 401. The default calls ``renewCredentials(after:)``; an
    /// authorizer that must know whether the request is part of its own renewal (to fail a
    /// renewal that waits for itself) captures that here.
    func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error>
}

extension Authorizer {
    public func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        { rejected in self.renewCredentials(after: rejected) }
    }
}

extension TokenStore: Authorizer {
    /// The hosts this store's tokens may go to. A store created without a scope authorises
    /// nothing through a client: name its hosts with `init(token:scope:…)`.
    public var scope: CredentialScope {
        credentialScope ?? CredentialScope(hosts: [])
    }

    public func renewCredentials(after rejected: URLRequest) -> Signal<Void, any Error> {
        freshToken(replacing: TokenStore.bearerToken(in: rejected)).map { _ in () }
    }

    /// A renewal that knows whether the request being subscribed is part of one of this store's
    /// refreshes: such a request answered 401 fails the refresh with
    /// ``RefreshError/reentrantRefresh`` instead of waiting for itself.
    public func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        renewal(events: nil)
    }

    /// ``renewal()``, with the refresh reported to `events` (the client's monitors).
    func renewal(events: HTTPEventSink?) -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        let ownRefresh = refreshBeingSubscribed
        return { [self] rejected in
            freshToken(replacing: TokenStore.bearerToken(in: rejected), fromRefresh: ownRefresh, events: events).map { _ in () }
        }
    }
}

extension HTTPClient {
    /// `attempt` for `request` with the authorizer's credentials added on every subscription
    /// (when the request is in its scope), and, on a 401 to credentials the authorizer added,
    /// one renewal and one more attempt.
    ///
    /// A ``TokenStore``'s refreshes are reported to `events` (the client's monitors) by the
    /// store; another authorizer's renewal is reported here
    /// (``HTTPEvent/Kind/authorizerRenewalStarted`` and how it ended).
    static func authorized(
        _ request: URLRequest,
        by authorizer: any Authorizer,
        events: HTTPEventSink?,
        attempt: @escaping @Sendable (consuming URLRequest) -> Signal<HTTPResponse, any Error>
    ) -> Signal<HTTPResponse, any Error> {
        guard let url = request.url, authorizer.scope.allows(url) else { return attempt(request) }
        // Only a client with monitors asks whether the authorizer is a store: a store reports its
        // own refreshes, another authorizer's renewal is reported here.
        let store = events == nil ? nil : authorizer as? TokenStore
        let report = store == nil ? events : nil
        // One stage rather than `deferred` and two `flatMap`s: every request in the scope passes
        // through it, and the renewal path is the rare one.
        return Signal { observer in
            // At subscription, so a request made by a renewal is known as such.
            let renew = if let events, let store {
                store.renewal(events: events)
            } else {
                authorizer.renewal()
            }
            let scope = CancellationToken()
            // Set (from the first attempt's serialised events) once its 401 starts the renewal:
            // the first attempt's completion is then not the signal's.
            let renewing = Locked(false)
            sendAuthorized(request, by: authorizer, attempt: attempt).observe(Observer { event in
                guard case .value(let response) = event, response.statusCode == 401 else {
                    if !renewing.withLock({ $0 }) { observer.send(event) }
                    return
                }
                renewing.withLock { $0 = true }
                let waiting = scope.makeChild()
                let rejected = response.request
                report?.emit(.authorizerRenewalStarted, request: rejected)
                renew(rejected).observe(Observer { renewal in
                    switch renewal {
                    case .value:
                        report?.emit(.authorizerRenewalEnded(renewed: true), request: rejected)
                        // Stop waiting (releases this waiter), then send the request again, once.
                        waiting.cancel()
                        sendAuthorized(request, by: authorizer, attempt: attempt).observe(observer, in: scope)
                    case .failed(let error):
                        report?.emit(.authorizerRenewalFailed(error), request: rejected)
                        observer.fail(error)
                    case .finished:
                        report?.emit(.authorizerRenewalEnded(renewed: false), request: rejected)
                        // A renewal that ends without renewing: the 401 is the answer.
                        observer.send(.value(response))
                        observer.finish()
                    }
                }, in: waiting)
            }, in: scope)
            return { scope.cancel() }
        }
    }

    /// `attempt` for `request` with the authorizer's credentials added now; fails with the
    /// authorizer's error if it cannot add them.
    private static func sendAuthorized(
        _ request: URLRequest,
        by authorizer: any Authorizer,
        attempt: (consuming URLRequest) -> Signal<HTTPResponse, any Error>
    ) -> Signal<HTTPResponse, any Error> {
        do {
            return attempt(try authorizer.authorize(request))
        } catch {
            return Signal(error: error)
        }
    }
}
