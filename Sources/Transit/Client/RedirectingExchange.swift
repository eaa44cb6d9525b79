import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// One request over a transport, following redirects by a ``RedirectPolicy``: the parts of the
/// last response, as they arrive.
///
/// Every hop is its own transport exchange. A redirect's head cancels that exchange (its body is
/// never read) and starts the next one; only the final response's parts are delivered.
struct RedirectingExchange: Sendable {
    let transport: any HTTPTransport
    /// The client's failover group: each hop whose origin is in the group goes to its first
    /// healthy origin, and to the next on a connection-level failure.
    let failover: HostFailover?
    /// The client's clock, which times the failover group's quarantines.
    let scheduler: any Scheduler
    let policy: RedirectPolicy
    let sensitiveHeaders: Set<String>
    let events: HTTPEventSink?
    /// Told about the head that is delivered (not those of redirects followed), before it is:
    /// the shared cooldowns' look at every response.
    let onFinalHead: (@Sendable (HTTPResponseHead) -> Void)?

    /// How a request goes: as one transport exchange, or hop by hop.
    private enum Route {
        case direct(Signal<HTTPResponsePart, any Error>)
        case hops
    }

    private func route(_ request: TransportRequest) -> Route {
        guard policy.mode == .never, failover == nil, onFinalHead == nil else { return .hops }
        // Without monitors, the exchange is the transport's, untouched: no event is built. Its
        // failures are annotated here (with hops, the hop annotates them: one stage fewer).
        guard let events else { return .direct(Self.hop(request, on: transport)) }
        return .direct(AttemptMonitoring.signal(request: request, sink: events) { [transport] request in
            Self.hop(request, on: transport)
        })
    }

    /// The parts of the last response to `request`.
    func signal(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        switch route(request) {
        case .direct(let parts):
            return parts
        case .hops:
            // Redirects, failover and the final head are all handled in this one stage: every
            // request of a client with policies passes through it.
            return Signal { observer in
                let scope = CancellationToken()
                Hop(self, observer: observer, scope: scope).start(request, hops: 0, lostCredentials: false)
                return { scope.cancel() }
            }
        }
    }

    /// Delivers the parts of the last response to `request` to `observer`, every hop observed in
    /// `scope`: the driver of a stage that holds the exchange inside its own (the buffered
    /// exchange), with no stage of its own.
    func start(_ request: TransportRequest, observer: Observer<HTTPResponsePart, any Error>, in scope: CancellationToken) {
        switch route(request) {
        case .direct(let parts):
            parts.observe(observer, in: scope)
        case .hops:
            Hop(self, observer: observer, scope: scope).start(request, hops: 0, lostCredentials: false)
        }
    }

    /// One exchange on the transport (on one origin of a failover group); its failures carry the
    /// request (`TransportError.annotating(_:sentWith:)`).
    private static func hop(_ request: TransportRequest, on transport: any HTTPTransport) -> Signal<HTTPResponsePart, any Error> {
        transport.exchange(request).mapError { TransportError.annotating($0, sentWith: request) }
    }

    /// Where a hop whose origin is in the failover group goes: `plan`'s first origin, then the
    /// next ones on connection-level failures. (A struct, not a tuple: a closure capturing a
    /// tuple of these types looks its layout up at run time.)
    private struct FailoverPlan: Sendable {
        let group: HostFailover
        /// The request's own origin.
        let own: String
        let plan: ArraySlice<String>
    }

    /// The hops of one subscription. Each exchange runs in a child of `scope`; cancelling the
    /// scope cancels whichever hop is running.
    ///
    /// A class, not a struct: each hop's observer captures it with one reference instead of a
    /// copy of all its fields (a retain and a release of each).
    private final class Hop: Sendable {
        /// The transport, the policies and the monitors every hop goes through.
        let route: RedirectingExchange
        let observer: Observer<HTTPResponsePart, any Error>
        let scope: CancellationToken

        init(_ route: RedirectingExchange, observer: Observer<HTTPResponsePart, any Error>, scope: CancellationToken) {
            self.route = route
            self.observer = observer
            self.scope = scope
        }

        var failover: HostFailover? { route.failover }
        var scheduler: any Scheduler { route.scheduler }
        var policy: RedirectPolicy { route.policy }
        var sensitiveHeaders: Set<String> { route.sensitiveHeaders }
        var events: HTTPEventSink? { route.events }
        var onFinalHead: (@Sendable (HTTPResponseHead) -> Void)? { route.onFinalHead }

        func start(_ request: TransportRequest, hops: Int, lostCredentials: Bool) {
            guard let failover, let plan = failover.plan(for: request.url, on: scheduler, forgettingRecovered: events != nil),
                  !plan.origins.isEmpty
            else {
                return attempt(request, hops: hops, failover: nil, lostCredentials: lostCredentials)
            }
            if let events {
                for origin in plan.recovered { events.emit(.hostRecovered(origin: origin)) }
            }
            attempt(
                request, hops: hops, failover: FailoverPlan(group: failover, own: plan.origin, plan: plan.origins[...]),
                lostCredentials: lostCredentials
            )
        }

        /// Sends `request`; with a failover plan, to its first origin (`own` is the request's
        /// origin), and on a failure that fails over, to the next.
        private func attempt(
            _ request: TransportRequest,
            hops: Int,
            failover: FailoverPlan?,
            lostCredentials: Bool
        ) {
            let exchange = scope.makeChild()
            let addressed = failover.map { HostFailover.request(request, at: $0.plan.first!, from: $0.own) } ?? request
            // With monitors, the attempt is reported (and sent with the monitors' fields).
            let attempt: AttemptReport?
            let sent: TransportRequest
            if let events {
                let started = AttemptReport.start(addressed, sink: events)
                attempt = started.report
                sent = started.sent
            } else {
                attempt = nil
                sent = addressed
            }
            let answered = failover.map { _ in Locked(false) }
            route.transport.exchange(sent).observe(Observer { [self] event in
                switch event {
                case .value(.head(let head)):
                    attempt?.receive(event)
                    answered?.withLock { $0 = true }
                    switch policy.next(after: head, to: request, hops: hops, sensitiveHeaders: sensitiveHeaders) {
                    case nil:
                        let final = lostCredentials ? HTTPResponseHead(credentialsDroppedBefore: head) : head
                        onFinalHead?(final)
                        observer.send(.head(final))
                    case .success(let next)?:
                        // The attempt ends as redirected, before its cancellation and the next
                        // hop; nothing more of this hop is delivered once its token is cancelled.
                        attempt?.end(.redirected)
                        exchange.cancel()
                        if let events { report(head.statusCode, from: request, to: next, to: events) }
                        let lost = lostCredentials || !stripped(from: request, to: next).isEmpty
                        start(next, hops: hops + 1, lostCredentials: lost)
                    case .failure(let error)?:
                        exchange.cancel()
                        observer.fail(error)
                    }
                case .failed(let failure):
                    // The failure carries the request of this hop, as sent.
                    let error = TransportError.annotating(failure, sentWith: sent)
                    attempt?.receive(.failed(error))
                    if let failover, let answered, !answered.withLock({ $0 }), failedOver(error, request: request, exchange: exchange, hops: hops, failover: failover, lostCredentials: lostCredentials) {
                        return
                    }
                    observer.fail(error)
                default:
                    attempt?.receive(event)
                    observer.send(event)
                }
            }, in: exchange)
            // Cancelled before its exchange ended: the attempt ends as cancelled.
            if let attempt { exchange.add(attempt) }
        }

        /// After `error` from the first origin of `failover.plan`, before any head: quarantines
        /// that origin if the error is a connection-level failure, and sends the request to the
        /// next origin when there is one. Returns `true` if it did (the error is not passed on).
        private func failedOver(
            _ error: any Error,
            request: TransportRequest,
            exchange: CancellationToken,
            hops: Int,
            failover: FailoverPlan,
            lostCredentials: Bool
        ) -> Bool {
            guard let origin = failover.plan.first,
                  let urlError = (error as? TransportError)?.urlError ?? (error as? URLError),
                  HostFailover.failsOver(urlError, method: request.method.rawValue)
            else { return false }
            let group = failover.group
            group.markFailed(origin, on: scheduler)
            events?.emit(.hostQuarantined(origin: origin, duration: group.quarantine, error: urlError))
            let rest = failover.plan.dropFirst()
            guard let next = rest.first else { return false }
            exchange.cancel()
            events?.emit(.failover(from: origin, to: next, error: urlError))
            attempt(request, hops: hops, failover: FailoverPlan(group: group, own: failover.own, plan: rest), lostCredentials: lostCredentials)
            return true
        }

        /// Reports a redirect followed, naming the credential headers it dropped.
        private func report(_ status: Int, from request: TransportRequest, to next: TransportRequest, to events: HTTPEventSink) {
            events.emit(.redirectFollowed(status: status, to: next, strippedHeaders: stripped(from: request, to: next)), request: request)
        }

        /// The credential headers of `request` that `next`, the request a redirect led to, no
        /// longer has, sorted.
        private func stripped(from request: TransportRequest, to next: TransportRequest) -> [String] {
            let fields = request.headerFields
            guard !fields.isEmpty else { return [] }
            let kept = Set(next.headerFields.map { $0.name.lowercased() })
            var named = Set<String>()
            return fields.map(\.name)
                .filter { name in
                    RedirectPolicy.dropsAcrossOrigins(name, sensitiveHeaders: sensitiveHeaders) && !kept.contains(name.lowercased())
                        && named.insert(name.lowercased()).inserted
                }
                .sorted()
        }
    }
}

extension HTTPResponse {
    /// Whether every credential header of ``request`` reached the server that answered: `false`
    /// when a redirect to another origin dropped them on the way (they are never added back, so
    /// a redirect back to the original origin does not carry them either).
    var credentialsReachedServer: Bool {
        !head.credentialsDropped
    }

    /// Whether this response answers the credentials its request carried: they reached the
    /// server that answered (see ``credentialsReachedServer``), and that server is in `scope` —
    /// or, with no scope, has the request's own origin. A 401 that does not is the answer of some
    /// other server, and renewing credentials would not change it.
    func answersCredentials(sentIn scope: CredentialScope?) -> Bool {
        guard credentialsReachedServer else { return false }
        if let scope { return scope.allows(head.url) }
        guard let sent = sent.url else { return false }
        return RedirectPolicy.sameOrigin(sent, head.url)
    }
}
