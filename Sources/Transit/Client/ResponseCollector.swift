import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Output == HTTPResponsePart, Failure == any Error {
    /// The parts buffered into one ``HTTPResponse`` of at most `maxBytes` body bytes.
    ///
    /// A `Content-Length` above the limit fails at the head, before any body byte is read (unless
    /// the body is content-encoded: the length is then that of the encoded bytes, and transports
    /// deliver them decoded); a body that grows past it fails with the chunk that crosses it,
    /// which is not kept. Either way the upstream (the
    /// transfer) is cancelled at once and the signal fails with ``ResponseTooLargeError``.
    ///
    /// With a `deadline`, timed by `deadlines`, the signal also fails with `URLError(.timedOut)`
    /// (carried by a ``TransportError`` for `request`) and cancels the upstream if the response
    /// is not complete within `deadline` of the subscription; values do not restart the clock.
    /// It is the same as `within(_:deadlines:for:events:)` before the collection, in one stage
    /// instead of two: the buffered send's path, taken by every request.
    func collectResponse(
        for request: TransportRequest,
        maxBytes: Int,
        events: HTTPEventSink? = nil,
        deadline: Duration? = nil,
        deadlines: Deadlines? = nil
    ) -> Signal<HTTPResponse, any Error> {
        let parts = self
        // The request's form alone is kept: a response needs no files.
        let sent = TransportRequest(form: request.form)
        return Signal<HTTPResponse, any Error> { observer in
            let scope = CancellationToken()
            var deadlineID: UInt64?
            if let deadline, let deadlines {
                deadlineID = deadlines.arm(deadline, for: sent, events: events, cancelling: scope, failing: observer)
            }
            let buffer = Locked(ResponseBuffer(maxBytes: maxBytes))
            parts.observe(Observer { event in
                switch event {
                case .value(.head(let head)):
                    if let tooLarge = buffer.withLock({ $0.receive(head) }) { Self.fail(tooLarge, scope, observer) }
                case .value(.body(let chunk)):
                    if let tooLarge = buffer.withLock({ $0.receive(chunk) }) { Self.fail(tooLarge, scope, observer) }
                case .finished:
                    switch buffer.withLock({ $0.take() }) {
                    case .success(let (head, body)):
                        observer.send(HTTPResponse(data: body, head: head, sent: sent))
                        observer.finish()
                    case .failure(let error):
                        observer.fail(error)
                    }
                case .failed(let error):
                    // A transport's failures already carry the request (the redirecting exchange annotates them).
                    observer.fail(error)
                }
            }, in: scope)
            guard let deadlineID, let deadlines else { return { scope.cancel() } }
            return {
                deadlines.remove(deadlineID)
                scope.cancel()
            }
        }
    }

    /// Cancels the transfer and fails: the body is larger than `maxBytes`. (A function, not a
    /// closure in the stage: no allocation per request.)
    private static func fail(_ tooLarge: ResponseTooLargeError, _ scope: CancellationToken, _ observer: Observer<HTTPResponse, any Error>) {
        scope.cancel()
        observer.fail(tooLarge)
    }
}

/// A response being buffered from its parts, as a state machine apart from the code that drives
/// it: the head, then the body chunks, then ``take()`` at the end. It enforces the limit of
/// `maxBytes` body bytes: a `Content-Length` above it is refused at the head (unless the body is
/// content-encoded: the length is then that of the encoded bytes, and transports deliver them
/// decoded), and a body that grows past it with the chunk that crosses it, which is not kept.
/// Not thread-safe: its driver serialises the calls.
struct ResponseBuffer {
    let maxBytes: Int
    private var head: HTTPResponseHead?
    private var body = Data()
    /// The declared length, until the second chunk reserves room for it.
    private var declared = 0

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    /// Takes the head; returns the error to fail with when its declared length is over the limit.
    mutating func receive(_ head: HTTPResponseHead) -> ResponseTooLargeError? {
        let declared = head.expectedContentLength
        if declared > maxBytes, !head.isContentEncoded { return ResponseTooLargeError(limit: maxBytes, declaredLength: declared) }
        self.head = head
        self.declared = declared > 0 ? Int(declared) : 0
        return nil
    }

    /// Takes a body chunk; returns the error to fail with when it takes the body over the limit
    /// (the chunk is then not kept).
    mutating func receive(_ chunk: Data) -> ResponseTooLargeError? {
        guard body.count + chunk.count <= maxBytes else { return ResponseTooLargeError(limit: maxBytes) }
        if body.isEmpty {
            // Most bodies arrive in one chunk: keep it as it is, without a copy.
            body = chunk
        } else {
            // The second chunk: room for the whole declared body, once.
            if declared > body.count {
                body.reserveCapacity(declared)
                declared = 0
            }
            body.append(chunk)
        }
        return nil
    }

    /// The head and the body at the end of the parts, and the buffer emptied; or the error for
    /// parts that ended without a head.
    mutating func take() -> Result<(HTTPResponseHead, Data), URLError> {
        defer { self = ResponseBuffer(maxBytes: maxBytes) }
        guard let head else {
            return .failure(URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "The transport ended without a response head.",
            ]))
        }
        return .success((head, body))
    }
}

extension HTTPResponseHead {
    /// Whether the body is content-encoded (`Content-Encoding` other than `identity`). Transports
    /// deliver such a body decoded, so its `Content-Length` (the encoded length) says nothing of
    /// how many bytes arrive.
    var isContentEncoded: Bool {
        guard let encoding = value(forHTTPHeaderField: "Content-Encoding") else { return false }
        return encoding.split(separator: ",").contains { coding in
            let name = coding.trimmingCharacters(in: .whitespaces)
            return !name.isEmpty && name.caseInsensitiveCompare("identity") != .orderedSame
        }
    }

    /// The number of body bytes a transport delivers, when the head declares it: the
    /// `Content-Length` of a body that is not content-encoded.
    var declaredBodyLength: Int64? {
        let declared = expectedContentLength
        return declared >= 0 && !isContentEncoded ? declared : nil
    }
}
