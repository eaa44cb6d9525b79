import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

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
    /// match case-insensitively), so a request can always override the client. A default header
    /// with an invalid name or value, a header or method the request's helpers refused
    /// (`URLRequest.rejectedInput`), or an invalid header set by other means fails the signal with
    /// ``URLRequestError`` and nothing is sent.
    public func send(_ request: URLRequest) -> Signal<HTTPResponse, any Error> {
        var prepared = request
        for (field, value) in defaultHeaders.sorted(by: { $0.key < $1.key })
        where prepared.value(forHTTPHeaderField: field) == nil {
            prepared = prepared.settingValue(value, forHTTPHeaderField: field)
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

    /// The first reason `request` must not be sent: input a fluent helper refused (or a missing
    /// URL, see `URLRequest.rejectedInput`), or a header name that is not a token, or a header value with a control character, or a method that
    /// is not a token.
    static func validate(_ request: URLRequest) -> URLRequestError? {
        if let refused = request.rejectedInput { return refused }
        if let method = request.httpMethod, !HTTPSyntax.isToken(method) { return .invalidMethod(method) }
        for (field, value) in request.allHTTPHeaderFields ?? [:] {
            if let error = URLRequest.checkHeader(field, value) { return error }
        }
        return nil
    }

    /// The `URLError.userInfo` key under which ``send(_:)`` records the method of the request a
    /// transport error belongs to (a `String`), so that ``RetryPolicy`` can tell whether sending
    /// it again is safe without being told the method.
    public static let requestMethodKey = "TransitRequestMethod"

    /// A transport `URLError` with the request's method (and URL, if missing) added to its
    /// `userInfo`; the code is unchanged. Other errors are returned as they are.
    static func annotate(_ error: any Error, sentWith request: URLRequest) -> any Error {
        guard let urlError = error as? URLError, urlError.userInfo[requestMethodKey] == nil else { return error }
        var userInfo = urlError.userInfo
        userInfo[requestMethodKey] = request.httpMethod ?? "GET"
        if userInfo[NSURLErrorFailingURLErrorKey] == nil, let url = request.url {
            userInfo[NSURLErrorFailingURLErrorKey] = url
        }
        return URLError(urlError.code, userInfo: userInfo)
    }
}
