import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// A canned answer, for ``StubTransport`` and ``StubURLProtocol`` alike: a response (status,
/// headers, a body in one or more pieces, possibly ending with an error), a transport error, a
/// non-HTTP response, or no answer at all; delivered at once or after a delay.
///
/// What each stub can deliver:
/// - ``StubTransport`` delivers every answer. Delays (``delayed(by:)``) and the pace of
///   ``chunks(_:status:headers:every:thenFail:)`` run on its scheduler (a `TestScheduler` in
///   tests of time-based behaviour). A ``nonHTTP(body:mimeType:)`` answer, which an
///   `HTTPTransport` cannot deliver, fails the request with `URLError(.badServerResponse)` whose
///   description says so.
/// - ``StubURLProtocol`` delivers every answer at once: it has no scheduler, so an answer with a
///   delay or a paced body fails the request with `URLError(.resourceUnavailable)` whose
///   description says so.
public struct StubResponse: Sendable {
    enum Outcome: Sendable {
        /// A head, then `chunks` spaced `interval` apart, then the end or `failure`.
        case http(status: Int, headers: [String: String], chunks: [Data], interval: Duration, failure: (any Error)?)
        /// A plain `URLResponse`, as a `data:` or `file:` URL gives.
        case nonHTTP(mimeType: String?, body: Data)
        /// A transport error before any response.
        case failure(any Error)
        /// No answer until the request is cancelled.
        case pending
    }

    let outcome: Outcome
    /// How long the stub waits before answering.
    var delay: Duration = .zero

    init(outcome: Outcome) {
        self.outcome = outcome
    }

    /// A response with `status`, `headers` and `body`.
    public static func status(_ status: Int, headers: [String: String] = [:], body: Data = Data()) -> StubResponse {
        .chunks(body.isEmpty ? [] : [body], status: status, headers: headers)
    }

    /// A response whose body arrives in pieces: the head, then each of `chunks` (empty ones
    /// skipped), `interval` apart (the first one `interval` after the head), then the end — or,
    /// if `failure` is given, that error after the last chunk (a connection lost mid-body).
    public static func chunks(
        _ chunks: [Data],
        status: Int = 200,
        headers: [String: String] = [:],
        every interval: Duration = .zero,
        thenFail failure: (any Error)? = nil
    ) -> StubResponse {
        StubResponse(outcome: .http(
            status: status, headers: headers, chunks: chunks.filter { !$0.isEmpty }, interval: interval, failure: failure
        ))
    }

    /// A response whose body is `text`, UTF-8 encoded.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> StubResponse {
        .status(status, headers: headers, body: Data(text.utf8))
    }

    /// A response whose body is `json` (a JSON document as text), with
    /// `Content-Type: application/json` unless `headers` sets it.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> StubResponse {
        .status(status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine }, body: Data(json.utf8))
    }

    /// A response whose body is `value` encoded as JSON, with `Content-Type: application/json`
    /// unless `headers` sets it.
    public static func json<T: Encodable>(encoding value: T, status: Int = 200, headers: [String: String] = [:]) throws -> StubResponse {
        .status(status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine }, body: try JSONEncoder().encode(value))
    }

    /// A transport failure before any response, such as `URLError(.timedOut)`.
    public static func failure(_ error: any Error) -> StubResponse {
        StubResponse(outcome: .failure(error))
    }

    /// A plain `URLResponse` (not HTTP) with `body`, as a `data:` or `file:` URL gives. Only
    /// ``StubURLProtocol`` can deliver it; ``StubTransport`` fails the request with
    /// `URLError(.badServerResponse)`.
    public static func nonHTTP(body: Data = Data(), mimeType: String? = "application/octet-stream") -> StubResponse {
        StubResponse(outcome: .nonHTTP(mimeType: mimeType, body: body))
    }

    /// No answer at all: the request waits until it is cancelled (see
    /// ``StubURLProtocol/Registry/stoppedRequestCount``).
    public static var pending: StubResponse {
        StubResponse(outcome: .pending)
    }

    /// The same answer, delivered after `delay` on the ``StubTransport``'s scheduler.
    public func delayed(by delay: Duration) -> StubResponse {
        var copy = self
        copy.delay = delay
        return copy
    }

    /// `true` if delivering the answer needs a scheduler: it is delayed or its body is paced.
    var needsScheduler: Bool {
        if delay > .zero { return true }
        if case .http(_, _, let chunks, let interval, _) = outcome, interval > .zero, !chunks.isEmpty { return true }
        return false
    }
}
