import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization

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

        init(_ exchange: AuthorizedExchange, _ observer: Observer<Output, any Error>, _ context: SubscriptionContext) {
            self.exchange = exchange
            self.observer = observer
            scope = CancellationToken(context: context)
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
            // Made now, with the subscription's context: what it reads there is the same as at
            // subscription (whether the request is part of a refresh).
            let renew = exchange.authorizer.renewal(
                in: CredentialRenewalContext(scheduler: exchange.scheduler, events: exchange.events, subscription: scope.context)
            )
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

extension AttemptPart: AuthorizedAnswer {
    /// A 401 head, as a response without a body.
    var answer: HTTPResponse? {
        guard case .head(let head, let sent) = self, head.statusCode == 401 else { return nil }
        return HTTPResponse(data: Data(), head: head, sent: sent)
    }
}
