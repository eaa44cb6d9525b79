import Foundation
import Signals
import TransitTesting

/// The embedded forum API the example runs against by default, on 127.0.0.1.
///
/// - `POST /auth/login` `{"username","password"}` → tokens (ada / lovelace).
/// - `POST /auth/token` `{"refreshToken"}` → new tokens; the refresh token rotates.
/// - `GET /posts[?userId=N]` with `Authorization: Bearer <access token>` → posts, or 401 when the
///   token is unknown or expired, or 429 with `Retry-After` when the server is rate limiting.
///
/// - `GET /live` with a bearer token → the new posts as Server-Sent Events, resumed after
///   `Last-Event-ID` (see `LiveFeed.swift`).
///
/// - `/v2/…`: the API of step 8, whose client declares its policies once (see
///   `ForumServer+V2.swift`). A mirror (`ForumServer(mirroring:)`) serves it from a second port
///   with the same accounts and tokens, for failover.
///
/// Access tokens expire after `tokenLifetime` seconds; the example also expires them on demand
/// and asks for 429s, so that every run tells the same story.
final class ForumServer: Sendable {
    struct State {
        var accessTokens: [String: Date] = [:]
        var refreshTokens: Set<String> = []
        var nextTokenNumber = 1
        var pendingRateLimits: [Int] = []
        var refreshCount = 0
        var archiveURL: URL?
        var v2 = V2State()
    }

    let state: Guarded<State>
    /// `true` for a mirror: it serves `/v2/` from its own port, sharing the primary's state.
    let isMirror: Bool
    private let tokenLifetime: TimeInterval
    private let server = LoopbackServer()

    static let posts: [Post] = [
        Post(userId: 1, id: 1, title: "Welcome to the forum", body: "Say hello and tell us what you build."),
        Post(userId: 1, id: 2, title: "House rules", body: "Be kind. Retry with back-off."),
        Post(userId: 2, id: 3, title: "Tokens that expire", body: "Mine lasts a minute; how long is yours?"),
        Post(userId: 2, id: 4, title: "Retry-After in the wild", body: "Seconds, or an HTTP-date in three forms."),
        Post(userId: 3, id: 5, title: "Linux and URLSession", body: "Works, with a delegate and no bytes(for:)."),
        Post(userId: 3, id: 6, title: "Cancel when the view goes", body: "A bag per view model does it."),
    ]

    convenience init(tokenLifetime: TimeInterval = 60) {
        self.init(state: Guarded(State()), isMirror: false, tokenLifetime: tokenLifetime)
    }

    /// A mirror of `primary` on another port: same accounts, same tokens, same `/v2/` API.
    convenience init(mirroring primary: ForumServer) {
        self.init(state: primary.state, isMirror: true, tokenLifetime: primary.tokenLifetime)
    }

    private init(state: Guarded<State>, isMirror: Bool, tokenLifetime: TimeInterval) {
        self.state = state
        self.isMirror = isMirror
        self.tokenLifetime = tokenLifetime
        server.handler = { [state, tokenLifetime] request in
            if request.path.hasPrefix("/v2/") { return Self.handleV2(request, state: state, isMirror: isMirror) }
            return Self.handle(request, state: state, tokenLifetime: tokenLifetime)
        }
    }

    /// Starts listening on an ephemeral port of 127.0.0.1.
    func start() throws {
        try server.start()
    }

    func stop() {
        server.stop()
    }

    /// `http://127.0.0.1:<port>`.
    var baseURL: String { server.url().absoluteString }

    /// Makes every access token issued so far invalid, as if they had all expired.
    func expireAccessTokens() {
        state.withLock { $0.accessTokens = [:] }
    }

    /// The next `GET /posts` is answered `429 Too Many Requests` with `Retry-After: seconds`.
    func rateLimitNextRequest(retryAfter seconds: Int) {
        state.withLock { $0.pendingRateLimits.append(seconds) }
    }

    /// `GET /attachments/archive` (with a valid token) is redirected to `url`, on another origin.
    func redirectArchive(to url: URL) {
        state.withLock { $0.archiveURL = url }
    }

    /// How many times `POST /auth/token` issued new tokens.
    var refreshCount: Int { state.withLock { $0.refreshCount } }

    private static func handle(_ request: LoopbackRequest, state: Guarded<State>, tokenLifetime: TimeInterval) -> LoopbackResponse {
        switch (request.method, request.path) {
        case ("POST", "/auth/login"):
            guard let login = try? JSONDecoder().decode(LoginRequest.self, from: request.body) else {
                return .json(#"{"error":"invalid_request"}"#, status: 400)
            }
            guard login.username == "ada", login.password == "lovelace" else {
                return .json(#"{"error":"invalid_grant"}"#, status: 401)
            }
            return issueTokens(state: state, tokenLifetime: tokenLifetime, isRefresh: false)
        case ("POST", "/auth/token"):
            guard let refresh = try? JSONDecoder().decode(RefreshRequest.self, from: request.body) else {
                return .json(#"{"error":"invalid_request"}"#, status: 400)
            }
            let known = state.withLock { $0.refreshTokens.remove(refresh.refreshToken) != nil }
            guard known else { return .json(#"{"error":"invalid_grant"}"#, status: 401) }
            return issueTokens(state: state, tokenLifetime: tokenLifetime, isRefresh: true)
        case ("GET", "/attachments/archive"):
            let bearer = request.value(forHTTPHeaderField: "Authorization")
                .flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
            let (authorised, target) = state.withLock { state in
                (bearer.flatMap { state.accessTokens[$0] }.map { $0 > Date() } ?? false, state.archiveURL)
            }
            guard authorised else { return .json(#"{"error":"invalid_token"}"#, status: 401) }
            guard let target else { return .status(404) }
            return .status(302, headers: ["Location": target.absoluteString])
        case ("GET", "/posts"):
            let bearer = request.value(forHTTPHeaderField: "Authorization")
                .flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
            let now = Date()
            let (authorised, rateLimit) = state.withLock { state -> (Bool, Int?) in
                guard let bearer, let expiry = state.accessTokens[bearer], expiry > now else { return (false, nil) }
                return (true, state.pendingRateLimits.isEmpty ? nil : state.pendingRateLimits.removeFirst())
            }
            guard authorised else {
                return .json(#"{"error":"invalid_token"}"#, status: 401, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#])
            }
            if let rateLimit {
                return .json(#"{"error":"slow_down"}"#, status: 429, headers: ["Retry-After": "\(rateLimit)"])
            }
            var posts = posts
            if let user = request.queryItems.first(where: { $0.name == "userId" })?.value {
                guard let userId = Int(user) else { return .json(#"{"error":"userId must be a number"}"#, status: 400) }
                posts = posts.filter { $0.userId == userId }
            }
            guard let body = try? JSONEncoder().encode(posts) else { return .status(500) }
            return .status(200, headers: ["Content-Type": "application/json"], body: body)
        case ("GET", "/live"):
            return liveFeed(request, state: state)  // LiveFeed.swift
        default:
            return .json(#"{"error":"not_found"}"#, status: 404)
        }
    }

    private static func issueTokens(state: Guarded<State>, tokenLifetime: TimeInterval, isRefresh: Bool) -> LoopbackResponse {
        let response = state.withLock { state -> TokenResponse in
            let number = state.nextTokenNumber
            state.nextTokenNumber += 1
            if isRefresh { state.refreshCount += 1 }
            let access = "access-\(number)"
            let refresh = "refresh-\(number)"
            state.accessTokens[access] = Date(timeIntervalSinceNow: tokenLifetime)
            state.refreshTokens.insert(refresh)
            return TokenResponse(accessToken: access, refreshToken: refresh, expiresIn: Int(tokenLifetime))
        }
        guard let body = try? JSONEncoder().encode(response) else { return .status(500) }
        return .status(200, headers: ["Content-Type": "application/json"], body: body)
    }
}
