import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The driver of a stream of Server-Sent Events: it connects, feeds each body to a
/// ``ServerSentEventParser``, delivers the events, times the idle timeout, and reconnects with
/// `Last-Event-ID` as ``EventStreamReconnection`` decides, every wait on the client's scheduler.
///
/// Each subscription is one stream: one connection at a time, each a subscription of `connect`
/// (which sends through the client's policies, so every reconnection waits for the rate limit
/// and the cooldowns, and carries fresh credentials).
final class EventStream: Sendable {
    let options: EventStreamOptions
    let scheduler: any Scheduler
    /// One connection, sending `Last-Event-ID` with the given value unless it is empty.
    let connect: @Sendable (_ lastEventID: String) -> Signal<AttemptPart, any Error>

    /// The most bytes of an error response's body kept for its ``HTTPError``.
    static let keptErrorBodyBytes = 64 << 10

    init(options: EventStreamOptions, scheduler: any Scheduler, connect: @escaping @Sendable (String) -> Signal<AttemptPart, any Error>) {
        self.options = options
        self.scheduler = scheduler
        self.connect = connect
    }

    /// The stream as a signal: each subscription connects anew.
    var signal: Signal<ServerSentEvent, any Error> {
        Signal { observer in
            let subscription = Subscription(self, observer)
            subscription.connect()
            return { subscription.cancel() }
        }
    }

    /// `true` for a `Content-Type` of `text/event-stream` (any case, any parameters).
    static func isEventStream(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }

    /// One subscription: the connection in flight, or the wait before the next one.
    final class Subscription: Sendable {
        /// Where the current connection is.
        enum Phase {
            /// Sent; no head yet.
            case connecting
            /// Answered `200` with an event stream: its body is being parsed.
            case open(ServerSentEventParser)
            /// Answered `400` or more: its body is kept (up to ``keptErrorBodyBytes``) for the error.
            case errorBody(HTTPResponseHead, sent: TransportRequest, Data)
            /// Between connections, or over.
            case idle
        }

        struct State {
            /// Counts connections: events of an older one are ignored.
            var generation = 0
            var phase = Phase.idle
            var connection: CancellationToken?
            var timer: (any Cancellable)?
            var idleTimer: (any Cancellable)?
            /// When the current connection last received anything, on the scheduler's clock.
            var lastActivity = Duration.zero
            var reconnection: EventStreamReconnection
            var lastEventID: String
            var isOver = false
        }

        /// What to do once the lock is released.
        enum Action {
            case none
            case send([ServerSentEvent])
            case fail(any Error)
            case finish
            case reconnect(after: Duration)
        }

        let stream: EventStream
        let observer: Observer<ServerSentEvent, any Error>
        let state: Locked<State>

        init(_ stream: EventStream, _ observer: Observer<ServerSentEvent, any Error>) {
            self.stream = stream
            self.observer = observer
            state = Locked(State(reconnection: EventStreamReconnection(policy: stream.options.reconnection), lastEventID: stream.options.lastEventID ?? ""))
        }

        /// Starts a connection.
        func connect() {
            let token = CancellationToken()
            let started = state.withLock { state -> (generation: Int, lastEventID: String)? in
                guard !state.isOver else { return nil }
                state.generation += 1
                state.phase = .connecting
                state.connection = token
                state.timer = nil
                state.lastActivity = stream.scheduler.now
                return (state.generation, state.lastEventID)
            }
            guard let started else { return }
            if let idleTimeout = stream.options.idleTimeout { watchIdle(after: idleTimeout, generation: started.generation) }
            stream.connect(started.lastEventID).observe(Observer { [self] event in
                receive(event, generation: started.generation)
            }, in: token)
        }

        /// Ends everything: the connection, the timers.
        func cancel() {
            let (connection, timers) = state.withLock { state in
                state.isOver = true
                state.phase = .idle
                defer {
                    state.connection = nil
                    state.timer = nil
                    state.idleTimer = nil
                }
                return (state.connection, [state.timer, state.idleTimer])
            }
            connection?.cancel()
            timers.forEach { $0?.cancel() }
        }

        private func receive(_ event: Event<AttemptPart, any Error>, generation: Int) {
            let action = state.withLock { state -> Action in
                guard state.generation == generation, !state.isOver else { return .none }
                state.lastActivity = stream.scheduler.now
                switch event {
                case .value(.head(let head, let sent)):
                    return opened(head, sent: sent, &state)
                case .value(.body(let chunk)):
                    return received(chunk, &state)
                case .finished:
                    return ended(.ended, &state)
                case .failed(let error):
                    return ended(.failed(error), &state)
                }
            }
            perform(action)
        }

        private func opened(_ head: HTTPResponseHead, sent: TransportRequest, _ state: inout State) -> Action {
            let contentType = head.value(forHTTPHeaderField: "Content-Type")
            switch head.statusCode {
            case 200 where EventStream.isEventStream(contentType):
                let options = stream.options
                state.phase = .open(ServerSentEventParser(
                    lastEventID: state.lastEventID, reconnectionTime: state.reconnection.serverRetry,
                    maxLineBytes: options.maxLineBytes, maxEventBytes: options.maxEventBytes
                ))
                state.reconnection.opened()
                return .none
            case 200:
                return .fail(ServerSentEventError.notAnEventStream(contentType: contentType))
            case 204:
                return .finish
            case 400...:
                state.phase = .errorBody(head, sent: sent, Data())
                return .none
            default:
                return .fail(ServerSentEventError.unexpectedStatus(head.statusCode))
            }
        }

        private func received(_ chunk: Data, _ state: inout State) -> Action {
            switch state.phase {
            case .open(var parser):
                state.phase = .idle  // the parser is changed outside the state, not copied
                var events: [ServerSentEvent] = []
                do {
                    try parser.parse(chunk) { events.append($0) }
                } catch {
                    return .fail(error)
                }
                state.lastEventID = parser.lastEventID
                if let retry = parser.reconnectionTime { state.reconnection.serverRetry = retry }
                if !events.isEmpty { state.reconnection.deliveredEvent() }
                state.phase = .open(parser)
                return events.isEmpty ? .none : .send(events)
            case .errorBody(let head, let sent, var body):
                state.phase = .idle
                body.append(chunk.prefix(EventStream.keptErrorBodyBytes - body.count))
                state.phase = .errorBody(head, sent: sent, body)
                return .none
            case .connecting, .idle:
                return .none
            }
        }

        private func ended(_ ending: EventStreamReconnection.Ending, _ state: inout State) -> Action {
            let phase = state.phase
            state.phase = .idle
            switch phase {
            case .errorBody(let head, let sent, let body):
                let response = HTTPResponse(data: body, head: head, sent: sent)
                return .fail(makeHTTPError(for: response) ?? URLError(.badServerResponse))
            case .connecting where !state.reconnection.hasOpened:
                // The first connection: its failure is the stream's (a clean end without a head
                // does not happen with a transport that keeps its contract).
                if case .failed(let error) = ending { return .fail(error) }
                if case .stalled(let idleTimeout) = ending { return .fail(ServerSentEventError.stalled(idleTimeout: idleTimeout)) }
                return .fail(URLError(.badServerResponse))
            case .idle:
                // Already decided (a stall closed the connection as it ended).
                return .none
            case .open, .connecting:
                switch state.reconnection.decide(after: ending) {
                case .reconnect(let delay): return .reconnect(after: delay)
                case .fail(let error): return .fail(error)
                case .finish: return .finish
                }
            }
        }

        private func perform(_ action: Action) {
            switch action {
            case .none:
                return
            case .send(let events):
                for event in events { observer.send(event) }
            case .fail(let error):
                cancel()
                observer.fail(error)
            case .finish:
                cancel()
                observer.finish()
            case .reconnect(let delay):
                let (connection, idleTimer) = state.withLock { state in
                    defer {
                        state.connection = nil
                        state.idleTimer = nil
                    }
                    return (state.connection, state.idleTimer)
                }
                connection?.cancel()
                idleTimer?.cancel()
                let timer = stream.scheduler.schedule(after: delay) { [self] in connect() }
                let kept = state.withLock { state -> Bool in
                    guard !state.isOver else { return false }
                    state.timer = timer
                    return true
                }
                if !kept { timer.cancel() }
            }
        }

        /// Checks the idle timeout of connection `generation` after `delay`; again later while
        /// bytes keep arriving.
        private func watchIdle(after delay: Duration, generation: Int) {
            let timer = stream.scheduler.schedule(after: delay) { [self] in checkIdle(generation: generation) }
            let kept = state.withLock { state -> Bool in
                guard !state.isOver, state.generation == generation else { return false }
                state.idleTimer = timer
                return true
            }
            if !kept { timer.cancel() }
        }

        private func checkIdle(generation: Int) {
            guard let idleTimeout = stream.options.idleTimeout else { return }
            let now = stream.scheduler.now
            let (action, remaining) = state.withLock { state -> (Action, Duration?) in
                guard state.generation == generation, !state.isOver else { return (.none, nil) }
                if case .idle = state.phase { return (.none, nil) }
                let silence = now - state.lastActivity
                guard silence >= idleTimeout else { return (.none, idleTimeout - silence) }
                return (ended(.stalled(idleTimeout: idleTimeout), &state), nil)
            }
            if let remaining { return watchIdle(after: remaining, generation: generation) }
            perform(action)
        }
    }
}
