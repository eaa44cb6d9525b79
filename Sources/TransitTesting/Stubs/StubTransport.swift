import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

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
/// The stubs are the transport's own (``RequestStubs``: ``RequestStubs/stub(matching:)``,
/// ``RequestStubs/stub(_:path:)``, ``RequestStubs/requests``);
/// ``StubURLProtocol/Registry`` has the same ones and takes the same ``StubResponse`` answers.
///
/// Thread safety: stubs and recorded requests are behind a `Locked`; requests may be sent from
/// any thread.
public final class StubTransport: RequestStubs, HTTPTransport, @unchecked Sendable {
    /// The error for a request that no stub matches.
    public struct UnexpectedRequest: Error, CustomStringConvertible, LocalizedError, DescribedError, Sendable {
        /// The request nobody expected.
        public let request: URLRequest
        /// `true` if a stub matched the request but had no answer to give.
        package let matchedStubWithoutAnswer: Bool

        public var description: String {
            let name = "\(request.httpMethod ?? "GET") \(request.url?.redactedForLogging ?? "<no URL>")"
            return matchedStubWithoutAnswer
                ? "StubTransport: the stub matching \(name) has no answer; add one with thenRespond(_:)"
                : "StubTransport: unexpected request \(name); add a stub for it"
        }
    }

    private let scheduler: any Scheduler

    /// Creates a transport that delivers delayed answers on `scheduler` (a `TestScheduler` in
    /// tests of time-based behaviour). Undelayed answers are delivered at once, on the
    /// subscribing thread.
    public init(scheduler: any Scheduler = ImmediateScheduler()) {
        self.scheduler = scheduler
    }

    /// Answers `request` with its stub's next answer, as parts (see `HTTPTransport`).
    public func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let scheduler = self.scheduler
        return Signal { [self] observer in
            let urlRequest = request.urlRequest
            let stub = record(urlRequest)
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
                case .pending:
                    return
                case .failure(let error):
                    observer.fail(error)
                case .nonHTTP:
                    observer.fail(URLError(.badServerResponse, userInfo: [
                        NSLocalizedDescriptionKey: "StubTransport: the stub for \(urlRequest.httpMethod ?? "GET") \(urlRequest.url?.redactedForLogging ?? "<no URL>") answers with a non-HTTP response, which an HTTPTransport cannot deliver; StubURLProtocol can",
                    ]))
                case .http(let status, let headers, let chunks, let interval, let failure):
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
