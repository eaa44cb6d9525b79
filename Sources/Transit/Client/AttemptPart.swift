import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A part of one attempt's response as the client's authorizer sees it: the head with the request
/// that was sent (what a 401 renews the credentials after), then the body chunks. Streams and event
/// streams are sent through ``HTTPClient/authorized(_:by:scheduler:events:attempt:)`` as these.
enum AttemptPart: Sendable, AuthorizedAnswer {
    case head(HTTPResponseHead, sent: TransportRequest)
    case body(Data)

    /// The part of `part`, with `sent` on its head.
    init(_ part: HTTPResponsePart, sent: TransportRequest) {
        switch part {
        case .head(let head): self = .head(head, sent: sent)
        case .body(let chunk): self = .body(chunk)
        }
    }

    /// A 401 head, as a response without a body.
    var answer: HTTPResponse? {
        guard case .head(let head, let sent) = self, head.statusCode == 401 else { return nil }
        return HTTPResponse(data: Data(), head: head, sent: sent)
    }

    /// The part as a stream delivers it.
    var responsePart: HTTPResponsePart {
        switch self {
        case .head(let head, _): .head(head)
        case .body(let chunk): .body(chunk)
        }
    }
}
