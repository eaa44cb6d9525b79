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
    /// Called when a request's subscription starts: the function that renews the credentials if
    /// that request is answered 401. `context` holds the client's scheduler and reports to the
    /// client's monitors.
    ///
    /// The default calls ``renewCredentials(after:scheduler:)`` and reports
    /// ``HTTPEvent/Kind/credentialRenewalStarted`` and how it ended (succeeded, declined or
    /// failed, each shared by one request). An authorizer that shares one renewal between
    /// requests reports for itself (joined, shared by how many); one that must know whether the
    /// request is part of its own renewal (to fail a renewal that waits for itself) captures
    /// that here, as ``TokenStore`` does.
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
    /// requests wait). Reads, now, whether the request being subscribed is part of one of the
    /// store's refreshes: such a request must not wait for that refresh.
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

extension HTTPClient {
    /// `attempt` for `request` with the authorizer's credentials added on every subscription
    /// (when the request is in its scope), and, on a 401 to credentials the authorizer added,
    /// one renewal and one more attempt.
    ///
    /// The 401 must come from where the credentials went: the final response's URL is in the
    /// authorizer's scope and no redirect to another origin dropped the credentials on the way.
    /// A 401 from an origin a redirect led to (which never got them) is delivered as it is, so a
    /// host a redirect names cannot make the authorizer renew, nor use up its renewal limits.
    ///
    /// The renewal is the authorizer's (``Authorizer/renewal(in:)``), timed by `scheduler`, the
    /// client's, and reported to `events` (the client's monitors).
    ///
    /// `Output` is what an attempt delivers: the buffered ``HTTPResponse``, or a stream's parts
    /// (whose head is the answer a 401 renews on, see ``AuthorizedAnswer``).
    static func authorized<Output: AuthorizedAnswer>(
        _ request: TransportRequest,
        by authorizer: any Authorizer,
        scheduler: any Scheduler,
        events: HTTPEventSink?,
        attempt: @escaping @Sendable (consuming TransportRequest) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        guard let url = request.url, authorizer.scope.allows(url) else { return attempt(request) }
        // One stage rather than `deferred` and two `flatMap`s: every request in the scope passes
        // through it, and the renewal path is the rare one. Its signal captures one object, and
        // a subscription makes one more and its cancellation token.
        let exchange = AuthorizedExchange(
            request: request, authorizer: authorizer, scheduler: scheduler, events: events, attempt: attempt
        )
        return Signal(subscribing: { observer, context in
            let subscription = AuthorizedExchange.Subscription(exchange, observer, context)
            subscription.start()
            return { subscription.scope.cancel() }
        })
    }

    /// `attempt` for `request` with the authorizer's credentials added now; fails with the
    /// authorizer's error if it cannot add them.
    static func sendAuthorized<Output>(
        _ request: TransportRequest,
        by authorizer: any Authorizer,
        attempt: (consuming TransportRequest) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        do {
            return attempt(try authorize(request, by: authorizer))
        } catch {
            return Signal(error: error)
        }
    }
}

/// What ``HTTPClient/authorized(_:by:scheduler:events:attempt:)`` sends: the request, its authorizer and
/// how to attempt it, shared by every subscription.
private final class AuthorizedExchange<Output: AuthorizedAnswer>: Sendable {
    let request: TransportRequest
    let authorizer: any Authorizer
    /// The client's scheduler, which times the renewal.
    let scheduler: any Scheduler
    /// The client's monitors.
    let events: HTTPEventSink?
    let attempt: @Sendable (consuming TransportRequest) -> Signal<Output, any Error>

    init(
        request: TransportRequest,
        authorizer: any Authorizer,
        scheduler: any Scheduler,
        events: HTTPEventSink?,
        attempt: @escaping @Sendable (consuming TransportRequest) -> Signal<Output, any Error>
    ) {
        self.request = request
        self.authorizer = authorizer
        self.scheduler = scheduler
        self.events = events
        self.attempt = attempt
    }

    /// One subscription: the first attempt, and on its 401 the renewal and one more attempt.
    final class Subscription: Sendable {
        let exchange: AuthorizedExchange
        let observer: Observer<Output, any Error>
        let scope: CancellationToken
        /// Set (from the first attempt's serialised events) once its 401 starts the renewal:
        /// the first attempt's completion is then not the signal's.
        let renewing = Atomic<Bool>(false)
        /// The authorizer's renewal, made at subscription as ``Authorizer/renewal(in:)`` says.
        let renew: @Sendable (URLRequest) -> Signal<Void, any Error>

        init(_ exchange: AuthorizedExchange, _ observer: Observer<Output, any Error>, _ context: SubscriptionContext) {
            self.exchange = exchange
            self.observer = observer
            scope = CancellationToken(context: context)
            // At subscription, so a request made by a renewal is known as such.
            renew = exchange.authorizer.renewal(
                in: CredentialRenewalContext(scheduler: exchange.scheduler, events: exchange.events, subscription: context)
            )
        }

        func start() {
            // The observer captures this object alone, so it needs no context of its own.
            HTTPClient.sendAuthorized(exchange.request, by: exchange.authorizer, attempt: exchange.attempt)
                .observe(Observer { [self] event in receiveFirst(event) }, in: scope)
        }

        private func receiveFirst(_ event: Event<Output, any Error>) {
            // A 401 renews only when the credentials reached the server that answered: one in the
            // scope, which got them (no redirect to another origin dropped them on the way).
            // Any other 401 is the answer, as it is.
            guard case .value(let value) = event, let response = value.answer, response.statusCode == 401,
                  response.answersCredentials(sentIn: exchange.authorizer.scope)
            else {
                if !renewing.load(ordering: .acquiring) { observer.send(event) }
                return
            }
            renewing.store(true, ordering: .releasing)
            let waiting = scope.makeChild()
            let rejected = response.request
            renew(rejected).observe(Observer { [self] renewal in
                switch renewal {
                case .value:
                    // Stop waiting (releases this waiter), then send the request again, once.
                    waiting.cancel()
                    HTTPClient.sendAuthorized(exchange.request, by: exchange.authorizer, attempt: exchange.attempt)
                        .observe(observer, in: scope)
                case .failed(let error):
                    observer.fail(error)
                case .finished:
                    // A renewal that ends without renewing: the 401 is the answer (a stream's
                    // parts after its head were not kept: its body ends there).
                    observer.send(.value(value))
                    observer.finish()
                }
            }, in: waiting)
        }
    }
}

/// What an attempt of ``HTTPClient/authorized(_:by:scheduler:events:attempt:)`` delivers: a value
/// that may be the server's answer to the credentials sent.
protocol AuthorizedAnswer: Sendable {
    /// The response this value is, or whose head it carries, when it may be a 401 that renews the
    /// credentials; `nil` for a value that is none (a stream's body chunk, or a head whose status is
    /// not 401). Read for each value of the first attempt.
    var answer: HTTPResponse? { get }
}

extension HTTPResponse: AuthorizedAnswer {
    /// The buffered response itself.
    var answer: HTTPResponse? { self }
}
