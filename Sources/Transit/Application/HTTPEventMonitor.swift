import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Observes every request an ``HTTPClient`` sends: for logging, metrics or an example's narration.
///
/// Methods are called on the transport's threads and must return quickly. Every method has an
/// empty default implementation.
public protocol HTTPEventMonitor: Sendable {
    /// The request is about to be handed to the transport (after every modifier and default
    /// header was applied). Called once per attempt.
    func requestWillSend(_ request: URLRequest)
    /// The transport delivered a response, whatever its status code.
    func request(_ request: URLRequest, didReceive response: HTTPResponse)
    /// The transport failed (connection refused, timed out, cancelled, …).
    func request(_ request: URLRequest, didFailWith error: any Error)
}

extension HTTPEventMonitor {
    public func requestWillSend(_ request: URLRequest) {}
    public func request(_ request: URLRequest, didReceive response: HTTPResponse) {}
    public func request(_ request: URLRequest, didFailWith error: any Error) {}
}
