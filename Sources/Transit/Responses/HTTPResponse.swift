import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport received for one request: the body, the response, and the request that was
/// actually sent (after every modifier ran).
public struct HTTPResponse: Sendable {
    /// The response body. Empty when the response had none.
    public let data: Data
    /// The status line and headers.
    public let response: HTTPURLResponse
    /// The request that was sent, as the transport sent it.
    public let request: URLRequest
    /// The monitors of the client that received the response, so that operators further down
    /// the chain (retries, token refreshes) report to them. `nil` for a client without monitors.
    var eventSink: HTTPEventSink?

    /// Creates a response value.
    public init(data: Data, response: HTTPURLResponse, request: URLRequest) {
        self.data = data
        self.response = response
        self.request = request
    }

    /// The HTTP status code.
    public var statusCode: Int { response.statusCode }

    /// The value of the header `field`, matched case-insensitively.
    public func value(forHTTPHeaderField field: String) -> String? {
        response.value(forHTTPHeaderField: field)
    }

    /// The response headers, with the names the server sent.
    public var headers: [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers["\(name)"] = "\(value)"
        }
        return headers
    }

    /// The body decoded as UTF-8 text, or `nil` if it is not valid UTF-8.
    public var text: String? {
        String(data: data, encoding: .utf8)
    }
}
