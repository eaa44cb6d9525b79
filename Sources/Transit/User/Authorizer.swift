import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization

/// User-level credentials for an ``HTTPClient``: one object that both adds credentials to every
/// request in its ``scope`` and recovers from `401 Unauthorized` by renewing them and sending the
/// request once more (``HTTPClient/Configuration/authorizer``), instead of a modifier and an operator written
/// into every chain. ``TokenStore`` (bearer tokens, renewed on 401) and ``BasicCredentials``
/// (a static user name and password) are two.
public protocol Authorizer: Sendable {
    /// Where the credentials may go; a request outside it is sent without them.
    var scope: CredentialScope { get }
    /// `request` with the current credentials added. Throws (and nothing is sent) when they are
    /// not valid header values.
    func authorize(_ request: URLRequest) throws -> URLRequest
    /// The value of the `Authorization` header the current credentials are, when they are that
    /// one header whatever the request (a bearer token, a user name and password): the client
    /// then sets it on each request in ``scope`` (replacing any) without making a `URLRequest`
    /// for ``authorize(_:)``. `nil`, the default: the client calls ``authorize(_:)``. Throws as
    /// ``authorize(_:)`` does.
    func authorizationValue() throws -> String?
    /// A signal that sends one value once credentials newer than those `rejected` carried are
    /// available (renewing them if needed, shared with concurrent callers), or fails with the
    /// renewal's error. One that finishes without a value (credentials that cannot be renewed,
    /// as ``BasicCredentials``) makes the client deliver the 401 as the response; the request is
    /// not sent again.
    ///
    /// `scheduler` is the client's: time every wait and deadline of the renewal on it, so that a
    /// client given a `TestScheduler` renews in virtual time.
    func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error>
    /// Called when a request is answered 401 and its credentials are to be renewed: the function
    /// that renews them. `context` holds the client's scheduler, reports to the client's
    /// monitors, and carries what the request's subscription carries (so what is read from it is
    /// the same whenever the 401 comes). Most requests are never answered 401, and never pay for
    /// a renewal.
    ///
    /// The default calls ``renewCredentials(after:scheduler:)`` and reports
    /// ``HTTPEvent/Kind/credentialRenewalStarted`` and how it ended (succeeded, declined or
    /// failed, each shared by one request). An authorizer that shares one renewal between
    /// requests reports for itself (joined, shared by how many); one that must know whether the
    /// request is part of its own renewal (to fail a renewal that waits for itself) reads that
    /// from the context here, as ``TokenStore`` does.
    func renewal(in context: CredentialRenewalContext) -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error>
}

extension Authorizer {
    /// `nil`: the client gives each request to ``authorize(_:)``.
    public func authorizationValue() throws -> String? { nil }

    /// Renews through ``renewCredentials(after:scheduler:)`` on the context's scheduler, whatever
    /// request is being subscribed, and reports the renewal to the client's monitors.
    public func renewal(in context: CredentialRenewalContext) -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        { rejected in
            context.report(.credentialRenewalStarted, about: rejected)
            let renewed = Atomic<Bool>(false)
            return self.renewCredentials(after: rejected, scheduler: context.scheduler).handleEvents(
                receiveValue: { _ in
                    guard !renewed.exchange(true, ordering: .acquiringAndReleasing) else { return }
                    context.report(.credentialRenewalSucceeded(sharedBy: 1), about: rejected)
                },
                receiveCompletion: { completion in
                    switch completion {
                    case .failure(let error): context.report(.credentialRenewalFailed(error, sharedBy: 1), about: rejected)
                    case .finished: if !renewed.load(ordering: .acquiring) { context.report(.credentialRenewalDeclined, about: rejected) }
                    }
                }
            )
        }
    }
}

/// What the client gives an ``Authorizer``'s renewal (``Authorizer/renewal(in:)``): its
/// scheduler, and the way to its monitors.
public struct CredentialRenewalContext: Sendable {
    /// The client's scheduler: time every wait and deadline of the renewal on it.
    public let scheduler: any Scheduler
    /// The monitors of the client whose request is renewed; `nil` for a client without any.
    let events: HTTPEventSink?
    /// What the request's subscription carries (a ``TokenStore`` reads there whether the
    /// request is part of one of its refreshes).
    let subscription: SubscriptionContext

    /// Reports `kind` (one of the `credentialRenewal…` events) about `request` to the client's
    /// monitors.
    public func report(_ kind: HTTPEvent.Kind, about request: URLRequest? = nil) {
        events?.emit(kind, request: request)
    }
}

extension TokenStore: Authorizer {
    /// The hosts this store's tokens may go to. A store created without a scope authorises
    /// nothing through a client: name its hosts with `init(token:scope:limits:refresh:)`.
    public var scope: CredentialScope {
        credentialScope ?? CredentialScope(hosts: [])
    }

    /// `Bearer <current access token>`.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` when the token cannot be a header value.
    public func authorizationValue() throws -> String? {
        guard let header = credential.header else { throw URLRequestError.invalidBearerToken }
        return header
    }

    /// A fresh token after `rejected`'s (see ``freshToken(replacing:scheduler:)``), its refresh
    /// timed by `scheduler`.
    public func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> {
        freshToken(replacing: TokenStore.bearerToken(in: rejected), scheduler: scheduler, fromRefresh: nil, events: nil)
            .map { _ in () }
    }

    /// A fresh token after the rejected request's, its refresh timed by the context's scheduler
    /// and reported to the client's monitors by the store (once per client however many of its
    /// requests wait). Reads from the request's subscription context whether the request is part
    /// of one of the store's refreshes: such a request must not wait for that refresh.
    public func renewal(in context: CredentialRenewalContext) -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        let ownRefresh = refresh(in: context.subscription)
        return { rejected in
            self.freshToken(
                replacing: TokenStore.bearerToken(in: rejected), scheduler: context.scheduler, fromRefresh: ownRefresh,
                events: context.events
            ).map { _ in () }
        }
    }
}
