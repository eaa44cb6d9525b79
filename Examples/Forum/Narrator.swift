import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// Prints, as it happens, what the library did — from the clients' lifecycle events (it is their
/// ``HTTPEventMonitor``): every request sent, every response, every policy at work (rate limits,
/// cooldowns, retries, the retry budget, failovers, token refreshes, coalescing, redirects). It
/// counts the events by kind, so the example can check that each one happened, and adds up the
/// bytes of every exchange. Wall-clock time is read here for narration only; the library's own
/// waits run on schedulers.
final class Narrator: HTTPEventMonitor, Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var exchanges = 0
        var sentBytes: Int64 = 0
        var receivedBytes: Int64 = 0
        var lastAttempt: URLRequest?
        var waiters: [(name: String, count: Int, id: Int, resume: CheckedContinuation<Bool, Never>)] = []
        var nextWaiter = 0
    }

    private let start: Date
    /// Whether request lines show the bearer token. The embedded server's tokens are made up
    /// (`access-1`, `access-2`), and showing them makes a token refresh visible; a real log
    /// never shows credentials — step 8's narrator does not.
    private let showsTokens: Bool
    private let state = Guarded(State())

    init(start: Date = Date(), showsTokens: Bool = true) {
        self.start = start
        self.showsTokens = showsTokens
    }

    /// A narrator with the same clock, for another client.
    func sibling(showsTokens: Bool) -> Narrator {
        Narrator(start: start, showsTokens: showsTokens)
    }

    var requestCount: Int { count("requestStarted") }
    var refreshCount: Int { count("credentialRenewalSucceeded") }
    /// Exchanges with the transport, and their bytes, headers included.
    var traffic: (exchanges: Int, sent: Int64, received: Int64) {
        state.withLock { ($0.exchanges, $0.sentBytes, $0.receivedBytes) }
    }
    /// The last request handed to a transport, as it was sent (credentials included).
    var lastAttempt: URLRequest? { state.withLock { $0.lastAttempt } }

    /// How many events of the kind `name` (`retryScheduled`, `failover`, …) arrived so far.
    func count(_ name: String) -> Int {
        state.withLock { $0.counts[name] ?? 0 }
    }

    /// Waits until `count` events of the kind `name` arrived (`false` after `timeout`).
    func waitFor(_ name: String, count: Int, timeout: Duration = .seconds(5)) async -> Bool {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            let expired = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).resume
            }
            expired?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if (state.counts[name] ?? 0) >= count { return true }
                state.waiters.append((name, count, id, continuation))
                return false
            }
            if now { continuation.resume(returning: true) }
        }
    }

    func say(_ line: String) {
        let elapsed = Date().timeIntervalSince(start)
        let stamp = String(format: "%6.2fs", elapsed)
        print("\(stamp)  \(line)")
    }

    func heading(_ text: String) {
        print("\n\(text)")
    }

    func receive(_ event: HTTPEvent) {
        record(event)
        guard let line = line(for: event) else { return }
        say(line)
    }

    /// Counts `event` and wakes whoever waits for it.
    private func record(_ event: HTTPEvent) {
        let name = String(String(describing: event.kind).prefix { $0 != "(" })
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.counts[name, default: 0] += 1
            switch event.kind {
            case .attemptStarted: state.lastAttempt = event.request
            case .attemptEnded(let attempt):
                state.exchanges += 1
                state.sentBytes += Int64(attempt.sentHeadBytes) + attempt.sentBodyBytes
                state.receivedBytes += Int64(attempt.receivedHeadBytes) + attempt.receivedBodyBytes
            default: break
            }
            let total = state.counts[name]!
            let ready = state.waiters.filter { $0.name == name && $0.count <= total }
            state.waiters.removeAll { $0.name == name && $0.count <= total }
            return ready.map(\.resume)
        }
        for waiter in ready { waiter.resume(returning: true) }
    }

    /// What to print for `event`, if anything. Exchanges are added up, not printed one by one.
    private func line(for event: HTTPEvent) -> String? {
        let target = event.request.map { "\($0.httpMethod ?? "GET") \(Self.pathAndQuery(of: $0))" } ?? ""
        switch event.kind {
        case .requestStarted:
            var line = "→ \(target)"
            if showsTokens, let authorization = event.request?.value(forHTTPHeaderField: "Authorization") { line += "   (\(authorization))" }
            return line
        case .responseReceived(let response):
            var line = "← \(response.statusCode) \(Self.reasonPhrase(response))   \(target)"
            if let retryAfter = response.value(forHTTPHeaderField: "Retry-After") { line += "   Retry-After: \(retryAfter)" }
            return line
        case .requestFailed(let error):
            return "✗ \(target) failed: \(Self.describe(error))"
        case .redirectFollowed(let status, let next, let stripped):
            let dropped = stripped.isEmpty ? "" : " — dropped \(stripped.joined(separator: ", ")) (another origin)"
            return "[redirect] \(status) → \(next.url?.redactedForLogging ?? "?")\(dropped)"
        case .rateLimitWaited(_, let waited):
            return "[rate limit] \(target) held back \(Self.seconds(waited)) by the client's rate limit"
        case .cooldownStarted(_, let duration, let status):
            return "[cooldown] the \(status) asked for \(Self.seconds(duration)): new requests to this API wait that long"
        case .cooldownWait(_, let duration):
            return "[cooldown] \(target) waits \(Self.seconds(duration)) for the cooldown instead of meeting another 429"
        case .cooldownRefused(_, let remaining):
            return "[cooldown] \(target) refused at once: \(Self.seconds(remaining)) left, longer than the client waits"
        case .retryScheduled(let attempt, let delay, let failure):
            return "[retry] attempt \(attempt) of \(target) met \(Self.describe(failure)); trying again in \(Self.seconds(delay))"
        case .retryRefusedByBudget(let attempt, let failure):
            return "[retry budget] attempt \(attempt) of \(target) met \(Self.describe(failure)); NOT retried: the budget is spent"
        case .hostQuarantined(let origin, let duration, let error):
            let failure = error.code == .networkConnectionLost ? "lost the connection" : "failed (URLError \(error.code.rawValue))"
            return "[failover] \(origin) \(failure); avoided for \(Self.seconds(duration))"
        case .failover(let from, let to, _):
            return "[failover] \(from) → \(to)"
        case .hostRecovered(let origin):
            return "[failover] \(origin) is back: its quarantine is over"
        case .credentialRenewalStarted:
            return "[tokens] 401 → starting one refresh"
        case .credentialRenewalJoined(let waiters):
            return "[tokens] 401 → joining the refresh already running (\(waiters) waiting)"
        case .credentialRenewalSucceeded(let sharedBy):
            return "[tokens] refreshed, shared by \(sharedBy) request\(sharedBy == 1 ? "" : "s")"
        case .credentialRenewalFailed(let error, let sharedBy):
            return "[tokens] refresh failed for \(sharedBy) request\(sharedBy == 1 ? "" : "s"): \(Self.describe(error))"
        case .credentialRenewalRefused(let reason, _):
            return "[tokens] refresh refused: \(reason as? TokenStore.RefreshError == .reentrantRefresh ? "its own request got 401 (re-entrant)" : "too many refreshes")"
        case .coalescedRequestJoined(let subscribers):
            return "[coalescing] \(target) joined the identical request in flight (\(subscribers) share it)"
        default:
            return nil
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? any HTTPError { return "HTTP \(error.statusCode) \(error.reasonPhrase)" }
        return Redaction.redactingURLs(in: String(describing: error))
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.2f s", duration.timeInterval)
    }

    private static func reasonPhrase(_ response: HTTPResponse) -> String {
        if let error = HTTPClientError(statusCode: response.statusCode) { return error.reasonPhrase }
        if let error = HTTPServerError(statusCode: response.statusCode) { return error.reasonPhrase }
        switch response.statusCode {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        default: return HTTPURLResponse.localizedString(forStatusCode: response.statusCode).capitalized
        }
    }

    /// The path and query, with the values of secret-looking query items redacted.
    private static func pathAndQuery(of request: URLRequest) -> String {
        guard let url = request.url else { return "<no URL>" }
        let path = url.path.isEmpty ? "/" : url.path
        return Redaction.redact(urlString: url.query.map { "\(path)?\($0)" } ?? path)
    }
}
