import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a transport reports how much of a request's body it has sent: the upload's side of
/// ``ResponseBodyFile``'s progress.
///
/// ``HTTPClient`` sets one on ``TransportRequest/bodyProgress`` when the caller observes an
/// upload (``HTTPClient/upload(_:bodyFile:options:)``); transports only read it. A transport that
/// can count the body bytes it writes calls ``progress`` as they go out, from any thread, as often
/// as it likes (the client throttles what it passes on):
/// - `sent`: the body bytes of this exchange written to the connection so far (head and framing
///   not counted), never fewer than in its last report;
/// - `expected`: the body's length, when the transport knows it (`nil` otherwise: the client then
///   uses the length of the body it handed over).
///
/// Each call of ``HTTPTransport/exchange(_:)`` counts from zero again. A transport that cannot
/// count ignores it: the upload then reports only the start of each send.
public struct RequestBodyProgress: Sendable {
    /// Told the number of body bytes sent so far in this exchange, and the body's length when
    /// known.
    public let progress: @Sendable (_ sent: Int64, _ expected: Int64?) -> Void
    /// Told that an exchange of the request begins sending its body (of this length, when known).
    let started: @Sendable (_ expected: Int64?) -> Void

    /// Creates a destination for upload progress (the client makes one per upload).
    package init(
        started: @escaping @Sendable (_ expected: Int64?) -> Void,
        progress: @escaping @Sendable (_ sent: Int64, _ expected: Int64?) -> Void
    ) {
        self.started = started
        self.progress = progress
    }
}

extension TransportRequest {
    /// The length of the body this request sends, when known: the size of ``bodyFile``, else the
    /// size of ``body``; `nil` for a body streamed from a `URLRequest`'s `httpBodyStream` and
    /// for a file that cannot be read; `0` without a body.
    var sentBodyLength: Int64? {
        if let bodyFile {
            var status = stat()
            guard stat(bodyFile.path, &status) == 0 else { return nil }
            return Int64(status.st_size)
        }
        if let body { return Int64(body.count) }
        if isMadeFromURLRequest, urlRequest.httpBodyStream != nil { return nil }
        return 0
    }

    /// Whether the request sends a body (a file, bytes, or a `URLRequest`'s stream).
    var sendsBody: Bool {
        bodyFile != nil || body != nil || (isMadeFromURLRequest && urlRequest.httpBodyStream != nil)
    }
}
