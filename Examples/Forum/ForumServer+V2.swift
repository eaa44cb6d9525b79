import Foundation
import Signals
import TransitTesting

/// The `/v2/` API of the embedded forum, for step 8: every endpoint wants a valid bearer token,
/// and the example switches on the behaviours each policy answers.
///
/// - `GET /v2/tags` → `{"tags":[…],"servedBy":"primary"|"mirror"}`; when asked
///   (``rateLimitTags(forSeconds:)``), the next one starts a window of 429s with `Retry-After`.
/// - `GET /v2/status` → `{"ok":true}`, or 503 during a storm (``startStorm()``).
/// - `GET /v2/popular` → the tags, after 300 ms (slow enough for identical requests to overlap).
/// - `POST /v2/attachments` (multipart/form-data) → what arrived, part by part.
/// - During an outage (``startOutage()``) the primary drops every `/v2/` connection without
///   answering, as a crashed process behind a load balancer would; the mirror keeps serving.
struct V2State {
    /// The next `GET /v2/tags` starts a rate-limit window this long.
    var pendingTagRateLimit: Int?
    /// Until then, `GET /v2/tags` is answered 429.
    var tagsLimitedUntil: Date?
    /// How many 429s the server answered.
    var tooManyRequestsAnswered = 0
    var storm = false
    var outage = false
    /// Requests per path (both servers), for the example's checks.
    var hits: [String: Int] = [:]
    var stormHits = 0
}

/// One part of a multipart upload, as the server saw it.
struct ReceivedPart: Codable, Sendable, Equatable {
    let name: String
    let filename: String?
    let bytes: Int
}

/// `GET /v2/tags`.
struct TagList: Codable, Sendable {
    let tags: [String]
    let servedBy: String
}

extension ForumServer {
    static let tags = ["swift", "http", "linux", "signals"]

    /// The next `GET /v2/tags`, and every one in the `seconds` that follow, is answered
    /// `429 Too Many Requests` with `Retry-After`: a client that did not wait meets more 429s.
    func rateLimitTags(forSeconds seconds: Int) {
        state.withLock { $0.v2.pendingTagRateLimit = seconds }
    }

    /// How many 429s the `/v2/` API answered.
    var tooManyRequestsAnswered: Int { state.withLock { $0.v2.tooManyRequestsAnswered } }

    /// `GET /v2/status` answers 503 until ``endStorm()``.
    func startStorm() { state.withLock { $0.v2.storm = true; $0.v2.stormHits = 0 } }
    func endStorm() { state.withLock { $0.v2.storm = false } }
    /// How many requests the storm met.
    var stormHits: Int { state.withLock { $0.v2.stormHits } }

    /// The primary drops every `/v2/` connection until ``endOutage()``.
    func startOutage() { state.withLock { $0.v2.outage = true } }
    func endOutage() { state.withLock { $0.v2.outage = false } }

    /// Every refresh token stops working, as when a user's sessions are revoked.
    func revokeRefreshTokens() { state.withLock { $0.refreshTokens = [] } }

    /// How many requests for `path` the primary and the mirror answered.
    func hits(_ path: String) -> Int { state.withLock { $0.v2.hits[path] ?? 0 } }

    static func handleV2(_ request: LoopbackRequest, state: Guarded<State>, isMirror: Bool) -> LoopbackResponse {
        let bearer = request.value(forHTTPHeaderField: "Authorization")
            .flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let now = Date()
        enum Verdict { case drop, unauthorised, rateLimited(Int), storm, serve }
        let verdict = state.withLock { state -> Verdict in
            if state.v2.outage, !isMirror { return .drop }
            state.v2.hits[request.path, default: 0] += 1
            guard let bearer, let expiry = state.accessTokens[bearer], expiry > now else { return .unauthorised }
            if request.path == "/v2/tags" {
                if let seconds = state.v2.pendingTagRateLimit {
                    state.v2.pendingTagRateLimit = nil
                    state.v2.tagsLimitedUntil = now.addingTimeInterval(TimeInterval(seconds))
                }
                if let until = state.v2.tagsLimitedUntil, until > now {
                    state.v2.tooManyRequestsAnswered += 1
                    return .rateLimited(Int(until.timeIntervalSince(now).rounded(.up)))
                }
            }
            if request.path == "/v2/status", state.v2.storm {
                state.v2.stormHits += 1
                return .storm
            }
            return .serve
        }
        switch verdict {
        case .drop:
            return .dropConnection
        case .unauthorised:
            return .json(#"{"error":"invalid_token"}"#, status: 401, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#])
        case .rateLimited(let seconds):
            return .json(#"{"error":"slow_down"}"#, status: 429, headers: ["Retry-After": "\(seconds)"])
        case .storm:
            return .json(#"{"error":"overloaded"}"#, status: 503)
        case .serve:
            break
        }
        let servedBy = isMirror ? "mirror" : "primary"
        switch (request.method, request.path) {
        case ("GET", "/v2/tags"):
            return encoded(TagList(tags: tags, servedBy: servedBy))
        case ("GET", "/v2/popular"):
            return encoded(TagList(tags: Array(tags.prefix(2)), servedBy: servedBy)).delayed(by: .milliseconds(300))
        case ("GET", "/v2/status"):
            return .json(#"{"ok":true}"#)
        case ("POST", "/v2/attachments"):
            guard let contentType = request.value(forHTTPHeaderField: "Content-Type"),
                  let parts = try? MultipartFormDataParser.parse(request.body, contentType: contentType)
            else { return .json(#"{"error":"not multipart/form-data"}"#, status: 400) }
            return encoded(parts.map { ReceivedPart(name: $0.name ?? "", filename: $0.filename, bytes: $0.body.count) }, status: 201)
        default:
            return .json(#"{"error":"not_found"}"#, status: 404)
        }
    }

    private static func encoded(_ value: some Encodable, status: Int = 200) -> LoopbackResponse {
        guard let body = try? JSONEncoder().encode(value) else { return .status(500) }
        return .status(status, headers: ["Content-Type": "application/json"], body: body)
    }
}
