import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The one seam between Transit and the network: one HTTP exchange, delivered as it arrives.
///
/// A transport sends one request per subscription and delivers the response as
/// ``HTTPResponsePart``s:
///
/// 1. exactly one ``HTTPResponsePart/head(_:)`` (status and headers) as soon as it arrives,
///    whatever the status code;
/// 2. zero or more ``HTTPResponsePart/body(_:)`` chunks, none empty, in order, as they arrive;
/// 3. `finished` once the body is complete — or `failed` with the transport error (a `URLError`:
///    `.cannotConnectToHost`, `.networkConnectionLost`, `.timedOut`, …) at any point.
///
/// Rules every transport keeps (``HTTPClient`` builds everything else on them):
/// - **Cold.** Nothing is sent until the signal is subscribed; every subscription is a new
///   request.
/// - **Cancellable at any point.** Cancelling the subscription cancels the underlying task
///   (its connection is closed or returned) and nothing is delivered after it.
/// - **One exchange.** A transport does not follow redirects: a 3xx is delivered like any other
///   response. ``HTTPClient`` follows redirects by its ``RedirectPolicy``, so the rules (which
///   headers are dropped across origins, no https → http downgrade) are the same on every
///   transport.
/// - **No buffering of its own.** Chunks are delivered as they arrive; bounding memory is the
///   consumer's business (``HTTPClient`` bounds buffered responses with a limit).
/// - **Upload progress, when it can count.** A transport that knows how many body bytes it has
///   written reports them to the request's ``TransportRequest/bodyProgress`` (see
///   ``RequestBodyProgress``); one that cannot ignores it, and uploads then report only the start
///   of each send.
///
/// ``URLSessionTransport`` is the transport of Apple platforms and Linux; `TransitTesting` has
/// `StubTransport` for tests.
public protocol HTTPTransport: Sendable {
    /// A signal that sends `request` when subscribed and delivers its response as parts.
    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error>

    /// Whether the transport writes a response body to the request's
    /// ``TransportRequest/responseBodyFile`` itself (see ``ResponseBodyFile`` for the contract).
    /// `false` by default: the body arrives as parts and ``HTTPClient/download(_:to:options:)``
    /// writes it.
    var writesResponseBodiesToFiles: Bool { get }
}

extension HTTPTransport {
    /// `false`: the transport delivers every body as ``HTTPResponsePart/body(_:)`` parts.
    public var writesResponseBodiesToFiles: Bool { false }
}
