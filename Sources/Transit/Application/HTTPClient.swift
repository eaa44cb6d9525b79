import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The application-level owner of networking: one per app or per backend.
///
/// It holds the transport, the default headers (a `User-Agent` among them) and the event
/// monitors. Services conforming to ``RESTAPI`` send every request through their client.
public final class HTTPClient: Sendable {
    /// The client services use when they do not name one: a ``URLSessionTransport`` and a
    /// `User-Agent` of `Transit`.
    public static let shared = HTTPClient()

    /// The transport requests are sent with.
    public let transport: any HTTPTransport
    /// Headers added to every request that does not set them itself.
    public let defaultHeaders: [String: String]
    /// Monitors told about every request.
    public let monitors: [any HTTPEventMonitor]

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - transport: where requests go; ``URLSessionTransport/shared`` by default.
    ///   - defaultHeaders: headers added to every request that does not set them itself.
    ///   - userAgent: the `User-Agent` header, unless `defaultHeaders` or the request sets one.
    ///   - monitors: observers of every request and response.
    public init(
        transport: any HTTPTransport = URLSessionTransport.shared,
        defaultHeaders: [String: String] = [:],
        userAgent: String? = "Transit",
        monitors: [any HTTPEventMonitor] = []
    ) {
        self.transport = transport
        var headers = defaultHeaders
        if let userAgent, !headers.keys.contains(where: { $0.caseInsensitiveCompare("User-Agent") == .orderedSame }) {
            headers["User-Agent"] = userAgent
        }
        self.defaultHeaders = headers
        self.monitors = monitors
    }

    /// A signal that sends `request` (with the default headers added) when subscribed, and
    /// again on every subscription.
    ///
    /// A default header is added only when the request does not set that header itself (names
    /// match case-insensitively), so a request can always override the client. A request without
    /// a URL, a default header with an invalid name or value, or an invalid header or method set
    /// by other means fails the signal with ``URLRequestError`` and nothing is sent. A failure of
    /// the transport fails it with a ``TransportError`` that carries the request as sent.
    public func send(_ request: URLRequest) -> Signal<HTTPResponse, any Error> {
        var prepared = request
        do {
            for (field, value) in defaultHeaders.sorted(by: { $0.key < $1.key })
            where prepared.value(forHTTPHeaderField: field) == nil {
                prepared = try prepared.settingValue(value, forHTTPHeaderField: field)
            }
        } catch {
            return Signal(error: error)
        }
        if let error = Self.validate(prepared) { return Signal(error: error) }
        let sent = prepared
        let response = transport.send(sent).mapError { Self.annotate($0, sentWith: sent) }
        guard !monitors.isEmpty else { return response }
        let monitors = self.monitors
        return response.handleEvents(
            receiveSubscription: { monitors.forEach { $0.requestWillSend(sent) } },
            receiveValue: { value in monitors.forEach { $0.request(sent, didReceive: value) } },
            receiveCompletion: { completion in
                if case .failure(let error) = completion {
                    monitors.forEach { $0.request(sent, didFailWith: error) }
                }
            }
        )
    }
}
