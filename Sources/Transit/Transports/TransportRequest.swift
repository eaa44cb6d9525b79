import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport sends: the request, where its body comes from and, for a transport that
/// can, where the response body goes.
public struct TransportRequest: Sendable {
    /// The request: method, URL, headers and, unless ``bodyFile`` is set, its body
    /// (`httpBody`).
    public var urlRequest: URLRequest
    /// A file whose contents are the body, streamed from disk without being read into memory.
    /// When set, `urlRequest.httpBody` is ignored.
    public var bodyFile: URL?
    /// Where a transport whose ``HTTPTransport/writesResponseBodiesToFiles`` is `true` writes
    /// the response body itself, instead of delivering it as ``HTTPResponsePart/body(_:)``
    /// parts. Other transports ignore it. ``HTTPClient`` sets it for downloads only.
    public var responseBodyFile: ResponseBodyFile?

    /// Creates a transport request.
    public init(_ urlRequest: URLRequest, bodyFile: URL? = nil, responseBodyFile: ResponseBodyFile? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
        self.responseBodyFile = responseBodyFile
    }
}

/// Where a transport writes a response body, and whom it tells how far it is.
///
/// The contract, for a transport whose ``HTTPTransport/writesResponseBodiesToFiles`` is `true`:
/// the body of the response, whatever its status, is written to ``url`` (created, or replaced if
/// a file is there) before `finished`, and no ``HTTPResponsePart/body(_:)`` part is delivered;
/// ``progress`` is called, from any thread, with the number of body bytes written so far and the
/// declared length when known. The transport writes on its own I/O path, so a slow disk holds the
/// network back instead of piling chunks up in memory. Progress may come before the head (on
/// Linux, `URLSession` gives a download task's response only when the body is complete). On
/// failure or cancellation the file may be missing or partial: its owner removes it.
public struct ResponseBodyFile: Sendable {
    /// Where the body is written.
    public let url: URL
    /// Told the number of body bytes written so far, and the declared length when known.
    public let progress: @Sendable (_ written: Int64, _ expected: Int64?) -> Void

    /// Creates a destination for a response body (the client makes one per download; transports
    /// only read it).
    package init(url: URL, progress: @escaping @Sendable (_ written: Int64, _ expected: Int64?) -> Void) {
        self.url = url
        self.progress = progress
    }
}
