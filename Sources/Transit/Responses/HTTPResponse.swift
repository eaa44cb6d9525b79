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
    /// The request that was sent, as the transport sent it (made as a `URLRequest` when read).
    public var request: URLRequest { sent.urlRequest }
    /// The request that was sent, as Transit carries it.
    var sent: TransportRequest { TransportRequest(form: sentForm) }
    /// What the request that was sent is made of: one reference, where the whole request would
    /// make every copy of a response (one per stage of a chain) copy its files too.
    private let sentForm: TransportRequest.Form

    /// Creates a response value.
    public init(data: Data, head: HTTPResponseHead, request: URLRequest) {
        self.init(data: data, head: head, sent: TransportRequest(request))
    }

    /// A response to `sent`.
    init(data: Data, head: HTTPResponseHead, sent: TransportRequest) {
        self.data = data
        self.head = head
        sentForm = sent.form
    }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }

    /// The value of the header `field`, matched case-insensitively (the values of a repeated
    /// field joined with `", "`). Every field, in order, is in ``head``
    /// (``HTTPResponseHead/fields``, ``HTTPResponseHead/values(forHTTPHeaderField:)``); Foundation's
    /// `HTTPURLResponse` is ``HTTPResponseHead/urlResponse``.
    public func value(forHTTPHeaderField field: String) -> String? {
        head.value(forHTTPHeaderField: field)
    }

    /// The body decoded as UTF-8 text, or `nil` if it is not valid UTF-8.
    public var text: String? {
        String(data: data, encoding: .utf8)
    }
}
