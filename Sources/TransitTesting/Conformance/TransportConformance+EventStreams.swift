import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// Server-Sent Events through an ``HTTPClient`` over the transport: what a long-lived streamed
/// response needs from every transport (each chunk as it arrives, a dropped connection reported
/// as one, cancellation that closes the connection at once).
extension TransportConformance {
    /// The checks of `HTTPClient.events` over a transport, kept apart from ``checks`` so that a
    /// transport's tests run them as a suite of their own:
    ///
    /// ```swift
    /// @Test(arguments: TransportConformance.eventStreamChecks)
    /// func events(_ check: TransportConformance.Check) async throws {
    ///     try await check.run { MyTransport() }
    /// }
    /// ```
    ///
    /// - a stream dropped mid-event (closed, then reset) reconnects with `Last-Event-ID` and
    ///   delivers every event exactly once, then finishes on a `204`;
    /// - a line without end (a gigabyte the server would send) fails at the line limit with
    ///   `ServerSentEventError.lineTooLong`, and the client closes the connection;
    /// - cancelling a stream closes its connection at once.
    public static let eventStreamChecks: [Check] = [
        Check("event stream reconnection", "A stream dropped mid-event (a close, then a reset) reconnects with Last-Event-ID and delivers every event exactly once, then finishes on 204.") { make in
            let client = HTTPClient(transport: try await make())
            try await withLoopbackServer { server in
                let headers = ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]
                let event: @Sendable (Int) -> Data = { id in Data("id: \(id)\ndata: event \(id)\ndata: line two\n\n".utf8) }
                server.handler = { request in
                    // The server resends what follows the last event ID it is told.
                    switch request.value(forHTTPHeaderField: "Last-Event-ID") {
                    case nil:
                        return .scripted(headers: headers, [.send(Data("retry: 5\n".utf8) + event(1)), .send(event(2).prefix(12)), .close])
                    case "1":
                        return .scripted(headers: headers, [.send(event(2) + event(3)), .send(Data("id: 4\ndata: cut".utf8)), .reset])
                    case "3":
                        return .scripted(headers: headers, [.send(event(4)), .send(event(5))])
                    default:
                        return .status(204)
                    }
                }
                var options = EventStreamOptions(idleTimeout: nil)
                options.reconnection = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), jitter: .none)
                let recorder = EventRecorder(client.events(URLRequest(url: server.url("/feed")), options: options))
                let completion = try await recorder.waitForEnd()
                if case .failure(let error) = completion {
                    throw ConformanceFailure(check: "", message: "the stream failed with \(describe(error)) after \(recorder.events.map(\.data)); expected it to finish")
                }
                try requireEqual(recorder.events.map(\.id), ["1", "2", "3", "4", "5"], "the events' IDs")
                try require(recorder.events.allSatisfy { $0.data == "event \($0.id ?? "")\nline two" }, "an event's data: \(recorder.events.map(\.data))")
                let lastEventIDs = server.requests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") }
                try requireEqual(lastEventIDs, [nil, "1", "3", "5"], "the Last-Event-ID of each connection")
                try require(server.requests.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" }, "a connection did not ask for text/event-stream")
            }
        },

        Check("event stream line limit", "A line without end (a gigabyte on offer) fails at the line limit with ServerSentEventError.lineTooLong, and the client closes the connection.") { make in
            let client = HTTPClient(transport: try await make())
            try await withLoopbackServer { server in
                let piece = Data(repeating: UInt8(ascii: "x"), count: 64 << 10)
                // 1 GiB of one line, if the client read it all.
                server.enqueue(.scripted(headers: ["Content-Type": "text/event-stream"], [.send(Data("data: ".utf8)), .sendRepeatedly(piece, times: 1 << 14)]))
                let limit = 1 << 20
                let recorder = EventRecorder(client.events(URLRequest(url: server.url("/huge")), options: EventStreamOptions(maxLineBytes: limit, idleTimeout: nil)))
                let completion = try await recorder.waitForEnd()
                guard case .failure(let error) = completion else {
                    throw ConformanceFailure(check: "", message: "the stream finished; expected ServerSentEventError.lineTooLong")
                }
                try require(error as? ServerSentEventError == .lineTooLong(limit: limit), "the stream failed with \(describe(error)); expected ServerSentEventError.lineTooLong(limit: \(limit))")
                let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount == 1 }
                try require(closed, "the connection was not closed after the line limit")
            }
        },

        Check("event stream cancel", "Cancelling an open event stream closes its connection at once; nothing is delivered afterwards.") { make in
            let client = HTTPClient(transport: try await make())
            try await withLoopbackServer { server in
                let hold = LoopbackGate("hold")
                defer { hold.open() }
                server.enqueue(.scripted(headers: ["Content-Type": "text/event-stream"], [.send(Data("data: first\n\n".utf8)), .wait(hold), .send(Data("data: late\n\n".utf8))]))
                let recorder = EventRecorder(client.events(URLRequest(url: server.url("/open"))))
                try await recorder.waitForEvents(1)
                recorder.cancel()
                let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount == 1 }
                try require(closed, "cancelling did not close the connection")
                hold.open()
                try requireEqual(recorder.events.map(\.data), ["first"], "the events")
                try requireEqual(recorder.eventsAfterCancel, 0, "events delivered after the cancel")
            }
        },
    ]
}

/// Records the events of one event stream and lets a check wait for them or for its end.
final class EventRecorder: Sendable {
    private struct State {
        var events: [ServerSentEvent] = []
        var completion: Completion<any Error>?
        var cancelled = false
        var eventsAfterCancel = 0
        var token: CancellationToken?
    }

    private let state = Locked(State())
    private let changes = AsyncCondition()

    /// Subscribes to `signal` at once; the recorder keeps the subscription until ``cancel()``.
    init(_ signal: Signal<ServerSentEvent, any Error>) {
        let token = signal.observe(Observer { [self] event in record(event) })
        let keep = state.withLock { state -> Bool in
            guard state.completion == nil, !state.cancelled else { return false }
            state.token = token
            return true
        }
        if !keep { token.cancel() }
    }

    private func record(_ event: Event<ServerSentEvent, any Error>) {
        state.withLock { state in
            if state.cancelled {
                state.eventsAfterCancel += 1
                return
            }
            switch event {
            case .value(let value): state.events.append(value)
            case .finished: state.completion = .finished
            case .failed(let error): state.completion = .failure(error)
            }
            if state.completion != nil { state.token = nil }
        }
        changes.signal()
    }

    var events: [ServerSentEvent] { state.withLock { $0.events } }
    var eventsAfterCancel: Int { state.withLock { $0.eventsAfterCancel } }

    func cancel() {
        let token = state.withLock { state -> CancellationToken? in
            state.cancelled = true
            defer { state.token = nil }
            return state.token
        }
        token?.cancel()
    }

    /// Waits for the terminal event.
    func waitForEnd(timeout: Duration = ConformanceTimeout.event) async throws -> Completion<any Error> {
        let ended = await changes.waitUntil(timeout: timeout) { state.withLock { $0.completion != nil } }
        try require(ended, "the event stream did not end within \(timeout) (events so far: \(events.map(\.data)))")
        return state.withLock { $0.completion! }
    }

    /// Waits until `count` events arrived.
    func waitForEvents(_ count: Int, timeout: Duration = ConformanceTimeout.event) async throws {
        let arrived = await changes.waitUntil(timeout: timeout) { state.withLock { $0.events.count >= count || $0.completion != nil } }
        try require(arrived && events.count >= count, "\(count) events did not arrive within \(timeout) (so far: \(events.map(\.data)))")
    }
}
