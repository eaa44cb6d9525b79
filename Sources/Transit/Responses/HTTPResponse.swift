import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport received for one request: the body, the response, and the request that was
/// actually sent (after every modifier ran).
public struct HTTPResponse: Sendable {
    /// The response body. Empty when the response had none.
    public let data: Data
    /// The status line and header fields, as the server sent them.
    public let head: HTTPResponseHead
    /// The request that was sent, as the transport sent it.
    public let request: URLRequest
    /// The monitors of the client that received the response, so that operators further down
    /// the chain (retries, token refreshes) report to them. `nil` for a client without monitors.
    var eventSink: HTTPEventSink?

    /// Creates a response value.
    public init(data: Data, head: HTTPResponseHead, request: URLRequest) {
        self.data = data
        self.head = head
        self.request = request
    }

    /// Creates a response value from Foundation's response type.
    public init(data: Data, response: HTTPURLResponse, request: URLRequest) {
        self.init(data: data, head: HTTPResponseHead(response), request: request)
    }

    /// The status line and headers as Foundation's `HTTPURLResponse`, made the first time it is
    /// read (see ``HTTPResponseHead/urlResponse``); ``head`` costs nothing and keeps repeated
    /// fields.
    public var response: HTTPURLResponse { head.urlResponse }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }

    /// The value of the header `field`, matched case-insensitively.
    public func value(forHTTPHeaderField field: String) -> String? {
        head.value(forHTTPHeaderField: field)
    }

    /// The response headers, with the names the server sent (repeated fields joined with
    /// `", "`).
    public var headers: [String: String] {
        head.allHeaderFields
    }

    /// The body decoded as UTF-8 text, or `nil` if it is not valid UTF-8.
    public var text: String? {
        String(data: data, encoding: .utf8)
    }
}
