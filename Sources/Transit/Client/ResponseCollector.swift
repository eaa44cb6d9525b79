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
            let buffer = Locked<(head: HTTPResponseHead?, body: Data, declared: Int)>((nil, Data(), 0))
            parts.observe(Observer { event in
                switch event {
                case .value(.head(let head)):
                    let declared = head.expectedContentLength
                    if declared > maxBytes, !head.isContentEncoded { return Self.tooLarge(maxBytes, declared: declared, scope, observer) }
                    buffer.withLock {
                        $0.head = head
                        $0.declared = declared > 0 ? Int(declared) : 0
                    }
                case .value(.body(let chunk)):
                    let fits = buffer.withLock { state -> Bool in
                        guard state.body.count + chunk.count <= maxBytes else { return false }
                        if state.body.isEmpty {
                            // Most bodies arrive in one chunk: keep it as it is, without a copy.
                            state.body = chunk
                        } else {
                            // The second chunk: room for the whole declared body, once.
                            if state.declared > state.body.count {
                                state.body.reserveCapacity(state.declared)
                                state.declared = 0
                            }
                            state.body.append(chunk)
                        }
                        return true
                    }
                    if !fits { Self.tooLarge(maxBytes, declared: nil, scope, observer) }
                case .finished:
                    let (head, body) = buffer.withLock { state in
                        defer { state = (nil, Data(), 0) }
                        return (state.head, state.body)
                    }
                    guard let head else {
                        return observer.fail(URLError(.badServerResponse, userInfo: [
                            NSLocalizedDescriptionKey: "The transport ended without a response head.",
                        ]))
                    }
                    observer.send(HTTPResponse(data: body, head: head, sent: sent))
                    observer.finish()
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
    private static func tooLarge(
        _ maxBytes: Int,
        declared: Int64?,
        _ scope: CancellationToken,
        _ observer: Observer<HTTPResponse, any Error>
    ) {
        scope.cancel()
        observer.fail(ResponseTooLargeError(limit: maxBytes, declaredLength: declared))
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
