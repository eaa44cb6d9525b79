import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A part of one attempt's response as the client's authorizer sees it: the head with the request
/// that was sent (what a 401 renews the credentials after), then the body chunks. Streams and event
/// streams are sent through the client's authorized stage as these.
enum AttemptPart: Sendable {
    case head(HTTPResponseHead, sent: TransportRequest)
    case body(Data)

    /// The part of `part`, with `sent` on its head.
    init(_ part: HTTPResponsePart, sent: TransportRequest) {
        switch part {
        case .head(let head): self = .head(head, sent: sent)
        case .body(let chunk): self = .body(chunk)
        }
    }

    /// The part as a stream delivers it.
    var responsePart: HTTPResponsePart {
        switch self {
        case .head(let head, _): .head(head)
        case .body(let chunk): .body(chunk)
        }
    }
}
