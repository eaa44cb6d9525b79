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
enum RedirectingExchange {
    static func signal(
        _ request: TransportRequest,
        transport: any HTTPTransport,
        failover: HostFailover? = nil,
        policy: RedirectPolicy,
        sensitiveHeaders: Set<String>,
        events: HTTPEventSink? = nil
    ) -> Signal<HTTPResponsePart, any Error> {
        // Without monitors, the exchange is the transport's, untouched: no event is built.
        let exchange: Exchange = switch (failover, events) {
        case (nil, nil):
            { request, _ in hop(request, on: transport) }
        case (nil, let events?):
            { request, mark in monitoredHop(request, on: transport, events: events, mark: mark) }
        case (let failover?, nil):
            { request, _ in FailoverExchange.signal(request, failover: failover) { hop($0, on: transport) } }
        case (let failover?, let events?):
            { request, mark in
                FailoverExchange.signal(request, failover: failover, events: events) {
                    monitoredHop($0, on: transport, events: events, mark: mark)
                }
            }
        }
        if policy.mode == .never { return exchange(request, nil) }
        return Signal { observer in
            let scope = CancellationToken()
            let run = Hop(
                exchange: exchange, policy: policy, sensitiveHeaders: sensitiveHeaders, events: events,
                observer: observer, scope: scope
            )
            run.start(request, hops: 0)
            return { scope.cancel() }
        }
    }

    /// One exchange (through failover, if any), told by the redirect-following hop when it is
    /// cancelled to follow a redirect (only when monitored).
    typealias Exchange = @Sendable (TransportRequest, AttemptMonitoring.RedirectMark?) -> Signal<HTTPResponsePart, any Error>

    /// One exchange on the transport (on one origin of a failover group); its failures carry the request (``HTTPClient/annotate(_:sentWith:events:)``).
    private static func hop(_ request: TransportRequest, on transport: any HTTPTransport) -> Signal<HTTPResponsePart, any Error> {
        let sent = request.urlRequest
        return transport.exchange(request).mapError { HTTPClient.annotate($0, sentWith: sent) }
    }

    /// ``hop(_:on:)``, reported to the client's monitors as one attempt.
    private static func monitoredHop(
        _ request: TransportRequest,
        on transport: any HTTPTransport,
        events: HTTPEventSink,
        mark: AttemptMonitoring.RedirectMark?
    ) -> Signal<HTTPResponsePart, any Error> {
        let sent = request.urlRequest
        return AttemptMonitoring.signal(request: request, sink: events, redirectMark: mark) { request in
            transport.exchange(request).mapError { HTTPClient.annotate($0, sentWith: sent, events: events) }
        }
    }

    /// The hops of one subscription. Each exchange runs in a child of `scope`; cancelling the
    /// scope cancels whichever hop is running.
    private struct Hop: Sendable {
        let exchange: Exchange
        let policy: RedirectPolicy
        let sensitiveHeaders: Set<String>
        let events: HTTPEventSink?
        let observer: Observer<HTTPResponsePart, any Error>
        let scope: CancellationToken

        func start(_ request: TransportRequest, hops: Int) {
            let exchange = scope.makeChild()
            let mark = events.map { _ in AttemptMonitoring.RedirectMark() }
            self.exchange(request, mark).observe(Observer { event in
                switch event {
                case .value(.head(let head)):
                    switch policy.next(after: head, to: request, hops: hops, sensitiveHeaders: sensitiveHeaders) {
                    case nil:
                        observer.send(.head(head))
                    case .success(let next)?:
                        // Nothing more of this hop is delivered once its token is cancelled.
                        mark?.fire()
                        exchange.cancel()
                        if let events { report(head.statusCode, from: request.urlRequest, to: next.urlRequest, to: events) }
                        start(next, hops: hops + 1)
                    case .failure(let error)?:
                        exchange.cancel()
                        observer.fail(error)
                    }
                default:
                    observer.send(event)
                }
            }, in: exchange)
        }

        /// Reports a redirect followed, naming the credential headers it dropped.
        private func report(_ status: Int, from request: URLRequest, to next: URLRequest, to events: HTTPEventSink) {
            let drop = RedirectPolicy.credentialHeaders.union(sensitiveHeaders)
            let kept = Set((next.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() })
            let stripped = (request.allHTTPHeaderFields ?? [:]).keys
                .filter { drop.contains($0.lowercased()) && !kept.contains($0.lowercased()) }
                .sorted()
            events.emit(.redirectFollowed(status: status, to: next, strippedHeaders: stripped), request: request)
        }
    }
}
