import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPTransport {
    /// A signal that sends `request` directly on this transport (no default headers, redirects,
    /// deadline or monitors: use ``HTTPClient`` for those) and delivers the response buffered,
    /// failing with ``ResponseTooLargeError`` beyond `maxResponseBytes` (32 MiB by default, as a
    /// client's).
    public func send(
        _ request: URLRequest,
        maxResponseBytes: Int = HTTPClient.defaultMaxResponseBytes
    ) -> Signal<HTTPResponse, any Error> {
        let request = TransportRequest(request)
        return exchange(request).collectResponse(for: request, maxBytes: maxResponseBytes)
    }
}
