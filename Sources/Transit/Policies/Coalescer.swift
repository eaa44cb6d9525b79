import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Request coalescing: identical GET and HEAD requests in flight at the same time share one
/// network request (``HTTPClient/Configuration/coalescesRequests``).
///
/// Requests are identical when their method, URL and every header (after the client's default
/// headers) are equal — so requests with different credentials never share. A subscriber may
/// cancel without cancelling the others; when the last one leaves, the shared request is
/// cancelled. A request that starts after the shared one has delivered its response starts a new
/// one: nothing is cached.
///
/// Thread safety: the flights are behind one lock; subscribers are called outside it.
final class Coalescer: Sendable {
    private struct Flight {
        var subscribers: [UInt64: Observer<HTTPResponse, any Error>] = [:]
        let scope = CancellationToken()
    }

    private struct State {
        var flights: [String: Flight] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Whether `request` may be coalesced (a GET or HEAD without a body file).
    static func key(for request: URLRequest) -> String? {
        key(method: request.httpMethod ?? "GET", url: request.url, headers: request.allHTTPHeaderFields ?? [:])
    }

    /// The key under which identical requests in flight share one exchange: method, URL and
    /// header fields (names in any case, in any order); `nil` for a method other than GET and
    /// HEAD, which is never shared.
    static func key(method: String, url: URL?, headers: [String: String]) -> String? {
        guard method == "GET" || method == "HEAD", let url = url?.absoluteString else { return nil }
        let headers = headers
            .map { "\($0.key.lowercased()):\($0.value)" }
            .sorted()
            .joined(separator: "\n")
        return "\(method) \(url)\n\(headers)"
    }

    /// Joins the flight of `key`, or starts it with `signal`. A join is reported to `events` (the
    /// client's monitors) as about `request`.
    func send(
        _ key: String,
        _ signal: Signal<HTTPResponse, any Error>,
        request: TransportRequest,
        events: HTTPEventSink? = nil
    ) -> Signal<HTTPResponse, any Error> {
        Signal { [self] observer in
            let (id, start, sharing) = state.withLock { state -> (UInt64, CancellationToken?, Int) in
                let id = state.nextID
                state.nextID += 1
                if state.flights[key] != nil {
                    state.flights[key]!.subscribers[id] = observer
                    return (id, nil, state.flights[key]!.subscribers.count)
                }
                var flight = Flight()
                flight.subscribers[id] = observer
                state.flights[key] = flight
                return (id, flight.scope, 1)
            }
            if start == nil, let events {
                events.emit(.coalescedRequestJoined(subscribers: sharing), request: request)
            }
            if let scope = start {
                signal.observe(Observer { [self] event in
                    // The first event ends the flight for newcomers: a buffered response is one
                    // value followed at once by its end, so a late joiner would miss the value.
                    let subscribers = state.withLock { state -> [Observer<HTTPResponse, any Error>] in
                        guard let flight = state.flights[key], flight.scope === scope else { return [] }
                        state.flights[key] = nil
                        return flight.subscribers.sorted { $0.key < $1.key }.map(\.value)
                    }
                    deliver(event, to: subscribers, scope: scope)
                }, in: scope)
            }
            return { [self] in leave(id, key) }
        }
    }

    /// Sends `event` (and, after a value, `finished`) to every subscriber of a flight that ended.
    private func deliver(_ event: Event<HTTPResponse, any Error>, to subscribers: [Observer<HTTPResponse, any Error>], scope: CancellationToken) {
        guard !subscribers.isEmpty else { return }
        for subscriber in subscribers {
            subscriber.send(event)
            if case .value = event { subscriber.finish() }
        }
        scope.cancel()
    }

    private func leave(_ id: UInt64, _ key: String) {
        let orphaned = state.withLock { state -> CancellationToken? in
            guard state.flights[key]?.subscribers.removeValue(forKey: id) != nil else { return nil }
            guard state.flights[key]!.subscribers.isEmpty else { return nil }
            return state.flights.removeValue(forKey: key)?.scope
        }
        orphaned?.cancel()
    }

    /// The number of shared requests in flight.
    var flightCount: Int { state.withLock { $0.flights.count } }
}
