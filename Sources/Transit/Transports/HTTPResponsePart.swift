import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A piece of a response as it arrives: the head, then body chunks. The end of the body is the
/// end of the signal.
public enum HTTPResponsePart: Sendable {
    /// The status line and headers. Always the first part, exactly once.
    case head(HTTPResponseHead)
    /// A chunk of the body, in order, never empty.
    case body(Data)
}
