import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// A canned answer of a ``StubTransport``: a response (status, headers, body) or a transport
/// error, delivered at once or after a delay on the transport's scheduler.
public struct StubResponse: Sendable {
    enum Outcome: Sendable {
        /// A head, then `chunks` spaced `interval` apart, then the end or `failure`.
        case response(status: Int, headers: [String: String], chunks: [Data], interval: Duration, failure: (any Error)?)
        case failure(any Error)
    }

    let outcome: Outcome
    /// How long the transport waits, on its scheduler, before answering.
    var delay: Duration = .zero

    init(outcome: Outcome) {
        self.outcome = outcome
    }

    /// A response with `status`, `headers` and `body`.
    public static func status(_ status: Int, headers: [String: String] = [:], body: Data = Data()) -> StubResponse {
        .chunks(body.isEmpty ? [] : [body], status: status, headers: headers)
    }

    /// A streamed response: the head, then each of `chunks` (empty ones skipped), `interval`
    /// apart on the transport's scheduler (the first one `interval` after the head), then the end
    /// — or, if `failure` is given, that error after the last chunk (a connection lost
    /// mid-body).
    public static func chunks(
        _ chunks: [Data],
        status: Int = 200,
        headers: [String: String] = [:],
        every interval: Duration = .zero,
        thenFail failure: (any Error)? = nil
    ) -> StubResponse {
        StubResponse(outcome: .response(
            status: status, headers: headers, chunks: chunks.filter { !$0.isEmpty }, interval: interval, failure: failure
        ))
    }

    /// A response whose body is `text`, UTF-8 encoded.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> StubResponse {
        .status(status, headers: headers, body: Data(text.utf8))
    }

    /// A response whose body is `json` (a JSON document as text), with `Content-Type: application/json`.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> StubResponse {
        .status(status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine }, body: Data(json.utf8))
    }

    /// A response whose body is `value` encoded as JSON.
    public static func json<T: Encodable>(encoding value: T, status: Int = 200, headers: [String: String] = [:]) throws -> StubResponse {
        .status(status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine }, body: try JSONEncoder().encode(value))
    }

    /// A transport failure, such as `URLError(.timedOut)`.
    public static func failure(_ error: any Error) -> StubResponse {
        StubResponse(outcome: .failure(error))
    }

    /// The same answer, delivered after `delay` on the transport's scheduler.
    public func delayed(by delay: Duration) -> StubResponse {
        var copy = self
        copy.delay = delay
        return copy
    }
}

/// An `HTTPTransport` for tests: canned answers per request matcher, every request recorded.
///
/// ```swift
/// let transport = StubTransport(scheduler: scheduler)
/// transport.stub(.get, path: "/posts")
///     .thenRespond(.status(401))
///     .thenRespond(.json(#"[{"id":1}]"#))
/// ```
///
/// Each stub answers its matching requests with its responses in order, and repeats the last one
/// once they are used up. Stubs are tried in the order they were added; the first that matches
/// answers. A request that no stub matches fails with ``StubTransport/UnexpectedRequest``, whose
/// message names the request, so a test fails clearly instead of hanging.
///
/// Like a real transport, nothing happens until the signal is subscribed, every subscription is
/// a new request, and cancelling a delayed answer stops it from being delivered.
///
/// Thread safety: stubs and recorded requests are behind a `Locked`; requests may be sent from
/// any thread.
public final class StubTransport: HTTPTransport {
    /// The error for a request that no stub matches.
    public struct UnexpectedRequest: Error, CustomStringConvertible, LocalizedError, Sendable {
        /// The request nobody expected.
        public let request: URLRequest
        /// `true` if a stub matched the request but had no answer to give.
        public let matchedStubWithoutAnswer: Bool

        public var description: String {
            let name = "\(request.httpMethod ?? "GET") \(request.url?.redactedForLogging ?? "<no URL>")"
            return matchedStubWithoutAnswer
                ? "StubTransport: the stub matching \(name) has no answer; add one with thenRespond(_:)"
                : "StubTransport: unexpected request \(name); add a stub for it"
        }

        public var errorDescription: String? { description }
    }

    /// A matcher and its answers, in order; the last one repeats once the others are used up.
    public typealias Stub = RequestStub<StubResponse>

    private let scheduler: any Scheduler
    private let stubs = RequestStubs<StubResponse>()

    /// Creates a transport that delivers delayed answers on `scheduler` (a `TestScheduler` in
    /// tests of time-based behaviour). Undelayed answers are delivered at once, on the
    /// subscribing thread.
    public init(scheduler: any Scheduler = ImmediateScheduler()) {
        self.scheduler = scheduler
    }

    /// Adds a stub for the requests `matches` accepts.
    @discardableResult
    public func stub(matching matches: @escaping @Sendable (URLRequest) -> Bool) -> Stub {
        stubs.add(matching: matches)
    }

    /// Adds a stub for requests with `method` whose URL path is `path` (any query), or any path
    /// when `path` is `nil`.
    @discardableResult
    public func stub(_ method: HTTPMethod? = nil, path: String? = nil) -> Stub {
        stubs.add(method, path: path)
    }

    /// Every request sent so far, in order, including unexpected ones.
    public var requests: [URLRequest] {
        stubs.requests
    }

    /// Forgets the recorded requests; the stubs stay.
    public func clearRequests() {
        stubs.clearRequests()
    }

    /// Answers `request` with its stub's next answer, as parts (see `HTTPTransport`).
    public func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let scheduler = self.scheduler
        return Signal { [self] observer in
            let urlRequest = request.urlRequest
            let stub = stubs.record(urlRequest)
            guard let stub, let answer = stub.nextAnswer() else {
                observer.fail(UnexpectedRequest(request: urlRequest, matchedStubWithoutAnswer: stub != nil))
                return nil
            }
            let response = answer(urlRequest)
            // The scheduled next step, and whether the subscription ended (nothing more is scheduled).
            let pending = Locked<(next: (any Cancellable)?, ended: Bool)>((nil, false))
            @Sendable func later(_ delay: Duration, _ action: @escaping @Sendable () -> Void) {
                guard !pending.withLock({ $0.ended }) else { return }
                // Scheduled outside the lock: an immediate scheduler runs the action at once.
                let scheduled = scheduler.schedule(after: delay, action)
                let ended = pending.withLock { state -> Bool in
                    state.next = scheduled
                    return state.ended
                }
                if ended { scheduled.cancel() }
            }
            /// Delivers `steps` in order, `interval` apart on the scheduler (at once when zero).
            @Sendable func run(_ steps: ArraySlice<Event<HTTPResponsePart, any Error>>, interval: Duration) {
                var steps = steps
                while let step = steps.popFirst() {
                    observer.send(step)
                    if interval > .zero, !steps.isEmpty, case .value(.body) = steps.first! {
                        let rest = steps
                        later(interval) { run(rest, interval: interval) }
                        return
                    }
                }
            }
            let deliver: @Sendable () -> Void = {
                switch response.outcome {
                case .failure(let error):
                    observer.fail(error)
                case .response(let status, let headers, let chunks, let interval, let failure):
                    guard let url = urlRequest.url else {
                        observer.fail(URLError(.badServerResponse))
                        return
                    }
                    let head = HTTPResponseHead(url: url, statusCode: status, headerFields: headers)
                    var steps: [Event<HTTPResponsePart, any Error>] = [.value(.head(head))]
                    steps += chunks.map { .value(.body($0)) }
                    steps.append(failure.map { .failed($0) } ?? .finished)
                    run(steps[...], interval: interval)
                }
            }
            if response.delay > .zero {
                later(response.delay, deliver)
            } else {
                deliver()
            }
            return {
                pending.withLock { state -> (any Cancellable)? in
                    state.ended = true
                    return state.next
                }?.cancel()
            }
        }
    }
}
