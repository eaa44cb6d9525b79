import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// What an upload reports: progress as the body is sent, then the response.
public enum UploadEvent: Sendable {
    /// More of the body was sent, or a send of it began (then ``UploadProgress/bytesSent`` is 0).
    case progress(UploadProgress)
    /// The response, buffered. Always the last value.
    case completed(HTTPResponse)
}

/// How far an upload is.
public struct UploadProgress: Sendable, Hashable {
    /// Body bytes written to the connection so far in this send of the body (the request's head
    /// and the transfer's framing not counted). Starts at 0 with each send.
    public let bytesSent: Int64
    /// How many bytes ``bytesSent`` counts up to, when known: the size of the file or of the bytes
    /// sent. `nil` for a body of unknown length (a `URLRequest`'s `httpBodyStream`), and when the
    /// transport sent more than that length. Never less than ``bytesSent``.
    public let expectedBytes: Int64?
    /// Which send of the body this counts: 1 for the first. A redirect that sends the body again
    /// (307, 308), a replay after a renewed token and each new subscription of the signal (a
    /// `retry`) count one more, and ``bytesSent`` starts again from 0.
    public let attempt: Int

    /// `true` when this count is not the first send's: the body is being sent again from its
    /// first byte (see ``attempt``).
    public var restarted: Bool { attempt > 1 }
}

extension HTTPClient {
    /// A signal that sends `request` (its body: `httpBody`, or `bodyFile` streamed from disk) and
    /// reports the body's progress as it is sent, then the buffered response: the upload's
    /// counterpart of ``download(_:to:options:)``.
    ///
    /// Each send of the body begins with ``UploadEvent/progress(_:)`` at 0 bytes (with
    /// ``UploadProgress/attempt`` counting the sends), goes up as the transport writes it, never
    /// backwards within a send, and ends at the body's length when the transport reports it.
    /// Reports are throttled on the client's scheduler: a report passes when at least 1 % more of
    /// a known length was sent, or 50 ms went by since the last one; the start of a send, the
    /// whole body sent, and the last count before the response always pass.
    /// ``UploadEvent/completed(_:)`` is the last value.
    ///
    /// As for a download, a response of 400 or more fails with its ``HTTPError`` (its body kept,
    /// up to the response limit), so `retry` policies apply directly; the request is otherwise
    /// sent as by ``send(_:bodyFile:options:)``: default headers, authoriser, redirects, limits
    /// and deadline. ``URLSessionTransport`` counts the bytes it sends; a transport that does not
    /// (see ``RequestBodyProgress``) reports only the start of each send.
    public func upload(
        _ request: URLRequest,
        bodyFile: URL? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Signal<UploadEvent, any Error> {
        upload(TransportRequest(request, bodyFile: bodyFile), options: options, sends: UploadSends())
    }

    /// ``upload(_:bodyFile:options:)`` for a request Transit carries; `sends` counts the sends of
    /// the body across the subscriptions of the signal the caller holds.
    func upload(_ request: TransportRequest, options: RequestOptions, sends: UploadSends) -> Signal<UploadEvent, any Error> {
        let scheduler = self.scheduler
        return Signal { observer in
            let reporter = UploadReporter(sends: sends, scheduler: scheduler, observer: observer)
            var observed = request
            observed.bodyProgress = RequestBodyProgress(
                started: { expected in reporter.start(expected: expected) },
                progress: { sent, expected in reporter.report(sent: sent, expected: expected) }
            )
            let scope = CancellationToken()
            self.send(observed, options: options).observe(Observer { event in
                switch event {
                case .value(let response):
                    reporter.end(makeHTTPError(for: response).map { .failed($0) } ?? .value(.completed(response)))
                case .finished:
                    reporter.end(.finished)
                case .failed(let error):
                    reporter.end(.failed(error))
                }
            }, in: scope)
            return {
                reporter.cancel()
                scope.cancel()
            }
        }
    }
}

/// The sends of an upload's body across the subscriptions of one signal: a `retry` subscribes
/// again, and its count says it is a new send.
final class UploadSends: Sendable {
    private let count = Locked(0)

    /// The number of the send that begins now.
    func next() -> Int {
        count.withLock { count in
            count += 1
            return count
        }
    }
}

/// Which progress reports of an upload pass: the state machine behind ``UploadReporter``, apart
/// from the locking and sending, so it can be read (and tested) alone.
struct UploadThrottle {
    /// A report passes when this share of a known length (1 %) was sent since the last one…
    static let minimumFraction: Int64 = 100
    /// …or when this long went by since the last one.
    static let minimumInterval: Duration = .milliseconds(50)

    private var attempt = 0
    private var sent: Int64 = 0
    /// The length of the body of the current send: the client's, else the transport's.
    private var expected: Int64?
    /// More was sent than a length said: the length is unknown for the rest of this send.
    private var overflowed = false
    private var lastReported: (sent: Int64, at: Duration)?
    private var ended = false

    /// A send of the body begins (the `attempt`th): its report of 0 bytes always passes.
    mutating func start(attempt: Int, expected: Int64?, now: Duration) -> UploadProgress? {
        guard !ended else { return nil }
        self.attempt = attempt
        sent = 0
        self.expected = expected
        overflowed = false
        lastReported = (0, now)
        return UploadProgress(bytesSent: 0, expectedBytes: expected, attempt: attempt)
    }

    /// The transport sent `sent` bytes of this send: the report, when it passes.
    mutating func report(sent: Int64, expected transportExpected: Int64?, now: Duration) -> UploadProgress? {
        guard !ended, attempt > 0, sent > self.sent else { return nil }
        self.sent = sent
        if expected == nil, !overflowed, let transportExpected, transportExpected >= 0 { expected = transportExpected }
        if let known = expected, sent > known {
            expected = nil
            overflowed = true
        }
        let last = lastReported ?? (0, now)
        let whole = expected == sent
        let enoughBytes = expected.map { expected in (sent - last.sent) * Self.minimumFraction >= expected } ?? false
        let enoughTime = now - last.at >= Self.minimumInterval
        guard whole || enoughBytes || enoughTime else { return nil }
        lastReported = (sent, now)
        return UploadProgress(bytesSent: sent, expectedBytes: expected, attempt: attempt)
    }

    /// The response arrived (or the upload failed): the last count, if it was held back, and no
    /// report after it.
    mutating func end() -> UploadProgress? {
        guard !ended else { return nil }
        ended = true
        guard attempt > 0, let last = lastReported, sent > last.sent else { return nil }
        return UploadProgress(bytesSent: sent, expectedBytes: expected, attempt: attempt)
    }
}

/// Passes one upload subscription's progress to its observer, throttled (``UploadThrottle``), in
/// order with its end.
///
/// Thread safety: reports come from the transport's threads and the end from the exchange's. Each
/// decision is taken under a lock and its events are queued in that order; whichever thread finds
/// no one sending sends the queue, outside the lock (no lock is held while the observer runs, and
/// an observer that reports or cancels from inside a send only adds to the queue), so a report never
/// overtakes another or the end.
final class UploadReporter: Sendable {
    private struct State {
        var throttle = UploadThrottle()
        var queue: [Event<UploadEvent, any Error>] = []
        var sending = false
        var cancelled = false
    }

    private let sends: UploadSends
    private let scheduler: any Scheduler
    private let observer: Observer<UploadEvent, any Error>
    private let state = Locked(State())

    init(sends: UploadSends, scheduler: any Scheduler, observer: Observer<UploadEvent, any Error>) {
        self.sends = sends
        self.scheduler = scheduler
        self.observer = observer
    }

    /// A send of the body begins.
    func start(expected: Int64?) {
        let attempt = sends.next()
        let now = scheduler.now
        deliver { state in
            state.throttle.start(attempt: attempt, expected: expected, now: now).map { [.value(.progress($0))] } ?? []
        }
    }

    /// The transport sent `sent` bytes.
    func report(sent: Int64, expected: Int64?) {
        let now = scheduler.now
        deliver { state in
            state.throttle.report(sent: sent, expected: expected, now: now).map { [.value(.progress($0))] } ?? []
        }
    }

    /// The exchange ended with `outcome` (the response or the failure): the last count held back,
    /// then `outcome`.
    func end(_ outcome: Event<UploadEvent, any Error>) {
        deliver { state in
            (state.throttle.end().map { [.value(.progress($0))] } ?? []) + [outcome]
        }
    }

    /// The subscription was cancelled (or ended): nothing more is reported.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.queue.removeAll()
        }
    }

    /// Queues what `decide` returns, then sends the queue unless another call is sending it.
    private func deliver(_ decide: (inout State) -> [Event<UploadEvent, any Error>]) {
        let sendsNow = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.queue.append(contentsOf: decide(&state))
            guard !state.sending, !state.queue.isEmpty else { return false }
            state.sending = true
            return true
        }
        guard sendsNow else { return }
        while let event = state.withLock({ state -> Event<UploadEvent, any Error>? in
            guard !state.queue.isEmpty else {
                state.sending = false
                return nil
            }
            return state.queue.removeFirst()
        }) {
            observer.send(event)
        }
    }
}

/// A transport that tells a request's ``RequestBodyProgress`` when each exchange of it begins to
/// send its body (a redirect's hop, a failover's host), then hands the exchange to `base`.
struct UploadAttempts: HTTPTransport {
    let base: any HTTPTransport

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        guard let progress = request.bodyProgress, request.sendsBody else { return base.exchange(request) }
        let base = self.base
        return Signal(deferred: {
            progress.started(request.sentBodyLength)
            return base.exchange(request)
        })
    }

    var writesResponseBodiesToFiles: Bool { base.writesResponseBodiesToFiles }
}
