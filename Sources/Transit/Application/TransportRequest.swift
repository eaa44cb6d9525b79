import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport sends: the request, and where its body comes from.
public struct TransportRequest: Sendable {
    /// The request: method, URL, headers and, unless ``bodyFile`` is set, its body
    /// (`httpBody`).
    public var urlRequest: URLRequest
    /// A file whose contents are the body, streamed from disk without being read into memory.
    /// When set, `urlRequest.httpBody` is ignored.
    public var bodyFile: URL?

    /// Creates a transport request.
    public init(_ urlRequest: URLRequest, bodyFile: URL? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
    }
}
