import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// Prints, as it happens, what the library did: every request sent, every response, every
/// token-store decision. Wall-clock time is read here for narration only; the library's own
/// waits run on schedulers.
final class Narrator: HTTPEventMonitor, Sendable {
    private let start = Date()
    private let counts = Locked((requests: 0, refreshes: 0))

    var requestCount: Int { counts.withLock { $0.requests } }
    var refreshCount: Int { counts.withLock { $0.refreshes } }

    func say(_ line: String) {
        let elapsed = Date().timeIntervalSince(start)
        let stamp = String(format: "%6.2fs", elapsed)
        print("\(stamp)  \(line)")
    }

    func heading(_ text: String) {
        print("\n\(text)")
    }

    func requestWillSend(_ request: URLRequest) {
        counts.withLock { $0.requests += 1 }
        var line = "→ \(request.httpMethod ?? "GET") \(Self.pathAndQuery(of: request))"
        if let token = TokenStore.bearerToken(in: request) { line += "   (Bearer \(token))" }
        say(line)
    }

    func request(_ request: URLRequest, didReceive response: HTTPResponse) {
        var line = "← \(response.statusCode) \(Self.reasonPhrase(response))"
        line += "   \(request.httpMethod ?? "GET") \(Self.pathAndQuery(of: request))"
        if let retryAfter = response.value(forHTTPHeaderField: "Retry-After") { line += "   Retry-After: \(retryAfter)" }
        say(line)
    }

    func request(_ request: URLRequest, didFailWith error: any Error) {
        say("✗ \(request.httpMethod ?? "GET") \(Self.pathAndQuery(of: request)) failed: \(error)")
    }

    /// Narrates what the token store decided.
    func tokenEvent(_ event: TokenStore.Event) {
        switch event {
        case .refreshStarted:
            say("[tokens] 401 → starting one refresh")
        case .refreshJoined(let waiters):
            say("[tokens] 401 → joining the refresh already running (\(waiters) waiting)")
        case .alreadyRefreshed:
            say("[tokens] 401 with an old token → replaying with the current one, no refresh")
        case .refreshed(let token, let sharedBy):
            counts.withLock { $0.refreshes += 1 }
            say("[tokens] refreshed → \(token.accessToken), shared by \(sharedBy) request\(sharedBy == 1 ? "" : "s")")
        case .refreshFailed(let error, let sharedBy):
            say("[tokens] refresh failed for \(sharedBy) request\(sharedBy == 1 ? "" : "s"): \(error)")
        }
    }

    private static func reasonPhrase(_ response: HTTPResponse) -> String {
        if let error = makeHTTPError(for: response) { return error.reasonPhrase }
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
