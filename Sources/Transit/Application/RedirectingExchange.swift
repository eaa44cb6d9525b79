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
        sensitiveHeaders: Set<String>
    ) -> Signal<HTTPResponsePart, any Error> {
        let exchange: @Sendable (TransportRequest) -> Signal<HTTPResponsePart, any Error> = if let failover {
            { request in FailoverExchange.signal(request, failover: failover) { hop($0, on: transport) } }
        } else {
            { request in hop(request, on: transport) }
        }
        if policy.mode == .never { return exchange(request) }
        return Signal { observer in
            let scope = CancellationToken()
            let run = Hop(exchange: exchange, policy: policy, sensitiveHeaders: sensitiveHeaders, observer: observer, scope: scope)
            run.start(request, hops: 0)
            return { scope.cancel() }
        }
    }

    /// One exchange on the transport (on one origin of a failover group); its failures carry the request (``HTTPClient/annotate(_:sentWith:)``).
    private static func hop(_ request: TransportRequest, on transport: any HTTPTransport) -> Signal<HTTPResponsePart, any Error> {
        let sent = request.urlRequest
        return transport.exchange(request).mapError { HTTPClient.annotate($0, sentWith: sent) }
    }

    /// The hops of one subscription. Each exchange runs in a child of `scope`; cancelling the
    /// scope cancels whichever hop is running.
    private struct Hop: Sendable {
        let exchange: @Sendable (TransportRequest) -> Signal<HTTPResponsePart, any Error>
        let policy: RedirectPolicy
        let sensitiveHeaders: Set<String>
        let observer: Observer<HTTPResponsePart, any Error>
        let scope: CancellationToken

        func start(_ request: TransportRequest, hops: Int) {
            let exchange = scope.makeChild()
            self.exchange(request).observe(Observer { event in
                switch event {
                case .value(.head(let head)):
                    switch policy.next(after: head, to: request, hops: hops, sensitiveHeaders: sensitiveHeaders) {
                    case nil:
                        observer.send(.head(head))
                    case .success(let next)?:
                        // Nothing more of this hop is delivered once its token is cancelled.
                        exchange.cancel()
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
    }
}
