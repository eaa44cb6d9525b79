import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The one seam between Transit and the network.
///
/// A transport sends one request per subscription and delivers exactly one ``HTTPResponse``
/// followed by `finished`, whatever the status code, or fails with the transport error (usually a
/// `URLError`). Cancelling the subscription cancels the request. Signals are cold: a transport
/// must not send anything until the signal is subscribed, and must send again on every
/// subscription.
///
/// ``URLSessionTransport`` is the production transport; `TransitTesting` has `StubTransport` for
/// tests.
public protocol HTTPTransport: Sendable {
    /// A signal that sends `request` when subscribed.
    func send(_ request: URLRequest) -> Signal<HTTPResponse, any Error>
}
