import Foundation
import Signals

/// The forum's behaviour, shared by its two servers (the embedded loopback server and the
/// generated server on Hummingbird): accounts and tokens, posts, attachments, and the switches a
/// test or the example turns on (expired tokens, 429s, 503s).
///
/// - `POST /auth/login` (ada / lovelace) and `POST /auth/token` issue tokens; a refresh token
///   works once.
/// - Every other operation wants `Authorization: Bearer <access token>`, else 401 with
///   `WWW-Authenticate`.
/// - `GET /posts` answers 429 with `Retry-After` while ``rateLimitNextRequests(_:retryAfter:)``
///   has some left, and sends two `Link` fields with its posts.
/// - `GET /status` answers 503 (with `Retry-After` when set) while ``failStatus(_:retryAfter:)``
///   has some left.
public final class ForumState: Sendable {
    /// A forum post.
    public struct Post: Codable, Sendable, Equatable {
        public var userId: Int
        public var id: Int
        public var title: String
        public var body: String
    }

    /// A pair of tokens, as the token endpoints send them.
    public struct Tokens: Sendable, Equatable {
        public var accessToken: String
        public var refreshToken: String
        public var expiresIn: Int
    }

    private struct State {
        var accessTokens: Set<String> = []
        var refreshTokens: Set<String> = []
        var nextToken = 1
        var refreshCount = 0
        var posts: [Post] = ForumState.initialPosts
        var rateLimits: [Int] = []
        var statusFailures: [Int?] = []
        var hits: [String: Int] = [:]
        var attachments: [String: Data] = [:]
        var startedDownloads = 0
        var abandonedDownloads = 0
        var traces: [[String]] = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private enum Counter: Sendable {
        case started, abandoned
    }

    private struct Waiter {
        let counter: Counter
        let count: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private let state = Locked(State())

    /// The posts the forum starts with.
    public static let initialPosts: [Post] = [
        Post(userId: 1, id: 1, title: "Welcome to the forum", body: "Say hello and tell us what you build."),
        Post(userId: 1, id: 2, title: "House rules", body: "Be kind. Retry with back-off."),
        Post(userId: 2, id: 3, title: "Tokens that expire", body: "Mine lasts a minute; how long is yours?"),
    ]

    /// The two `Link` fields `GET /posts` sends, in order.
    public static let postLinks = [#"</posts?page=1>; rel="first""#, #"</posts?page=1>; rel="last""#]

    /// The `Cache-Control` of `GET /posts`: a private cache may serve it for a minute.
    public static let postsCacheControl = "private, max-age=60"

    /// A forum with the initial posts and no attachments.
    public init() {}

    // MARK: - Tokens

    /// New tokens for ada / lovelace; `nil` for anyone else.
    public func login(username: String, password: String) -> Tokens? {
        guard username == "ada", password == "lovelace" else { return nil }
        return issue(isRefresh: false)
    }

    /// New tokens for a refresh token issued and not used yet; `nil` otherwise.
    public func refresh(_ refreshToken: String) -> Tokens? {
        let known = state.withLock { $0.refreshTokens.remove(refreshToken) != nil }
        return known ? issue(isRefresh: true) : nil
    }

    private func issue(isRefresh: Bool) -> Tokens {
        state.withLock { state in
            let number = state.nextToken
            state.nextToken += 1
            if isRefresh { state.refreshCount += 1 }
            state.accessTokens.insert("access-\(number)")
            state.refreshTokens.insert("refresh-\(number)")
            return Tokens(accessToken: "access-\(number)", refreshToken: "refresh-\(number)", expiresIn: 60)
        }
    }

    /// Whether `authorization` (an `Authorization` field's value) carries a valid access token.
    public func isAuthorized(_ authorization: String?) -> Bool {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
        let token = String(authorization.dropFirst(7))
        return state.withLock { $0.accessTokens.contains(token) }
    }

    /// Makes every access token issued so far invalid, as if they had all expired.
    public func expireAccessTokens() {
        state.withLock { $0.accessTokens = [] }
    }

    /// How many times `POST /auth/token` issued new tokens.
    public var refreshCount: Int { state.withLock { $0.refreshCount } }

    // MARK: - Switches

    /// The next `count` authorised `GET /posts` are answered 429 with `Retry-After: seconds`.
    public func rateLimitNextRequests(_ count: Int = 1, retryAfter seconds: Int) {
        state.withLock { $0.rateLimits += Array(repeating: seconds, count: count) }
    }

    /// The `Retry-After` of a 429 for the next `GET /posts`, if it is to get one.
    public func takeRateLimit() -> Int? {
        state.withLock { $0.rateLimits.isEmpty ? nil : $0.rateLimits.removeFirst() }
    }

    /// The next `count` `GET /status` are answered 503, with `Retry-After: seconds` when given.
    public func failStatus(_ count: Int, retryAfter seconds: Int? = nil) {
        state.withLock { $0.statusFailures += Array(repeating: seconds, count: count) }
    }

    /// Whether the next `GET /status` fails, and its `Retry-After`.
    public func takeStatusFailure() -> (fails: Bool, retryAfter: Int?) {
        state.withLock { $0.statusFailures.isEmpty ? (false, nil) : (true, $0.statusFailures.removeFirst()) }
    }

    /// Counts a request for `operation`.
    public func hit(_ operation: String) {
        state.withLock { $0.hits[operation, default: 0] += 1 }
    }

    /// How many requests for `operation` (`"listPosts"`, `"getStatus"`…) arrived.
    public func hits(_ operation: String) -> Int {
        state.withLock { $0.hits[operation] ?? 0 }
    }

    // MARK: - Posts and attachments

    /// The posts, of one user when `userId` is given.
    public func posts(userId: Int?) -> [Post] {
        state.withLock { state in state.posts.filter { userId == nil || $0.userId == userId } }
    }

    /// Adds a post by user 1 and returns it.
    public func createPost(title: String, body: String) -> Post {
        state.withLock { state in
            let post = Post(userId: 1, id: (state.posts.map(\.id).max() ?? 0) + 1, title: title, body: body)
            state.posts.append(post)
            return post
        }
    }

    /// Stores an attachment under `name`.
    public func storeAttachment(_ data: Data, name: String) {
        state.withLock { $0.attachments[name] = data }
    }

    /// The attachment stored under `name`.
    public func attachment(_ name: String) -> Data? {
        state.withLock { $0.attachments[name] }
    }

    /// Counts an endless download whose body started (the generated server's count).
    public func downloadStarted() { count(.started) }

    /// Counts an endless download whose client went away (the generated server's count).
    public func downloadAbandoned() { count(.abandoned) }

    /// Returns `true` once `count` endless downloads in all started, `false` after 30 s.
    public func waitUntilDownloadsStarted(_ count: Int) async -> Bool { await wait(.started, count) }

    /// Returns `true` once `count` endless downloads in all were abandoned by their clients,
    /// `false` after 30 s.
    public func waitUntilDownloadsAbandoned(_ count: Int) async -> Bool { await wait(.abandoned, count) }

    /// Records the `X-Forum-Trace` values of a `GET /status`, in order, when it has some.
    public func recordTrace(_ values: [String]) {
        guard !values.isEmpty else { return }
        state.withLock { $0.traces.append(values) }
    }

    /// The `X-Forum-Trace` values of each `GET /status` that had some.
    public var traces: [[String]] { state.withLock { $0.traces } }

    private static func value(of counter: Counter, in state: State) -> Int {
        switch counter {
        case .started: state.startedDownloads
        case .abandoned: state.abandonedDownloads
        }
    }

    private func count(_ counter: Counter) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            switch counter {
            case .started: state.startedDownloads += 1
            case .abandoned: state.abandonedDownloads += 1
            }
            var done: [CheckedContinuation<Bool, Never>] = []
            for (id, waiter) in state.waiters where Self.value(of: waiter.counter, in: state) >= waiter.count {
                done.append(waiter.continuation)
                state.waiters[id] = nil
            }
            return done
        }
        ready.forEach { $0.resume(returning: true) }
    }

    private func wait(_ counter: Counter, _ count: Int) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timeout = Task { [weak self] in
            try await Task.sleep(for: .seconds(30))
            let waiter = self?.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: false)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if Self.value(of: counter, in: state) >= count { return true }
                state.waiters[id] = Waiter(counter: counter, count: count, continuation: continuation)
                return false
            }
            if done { continuation.resume(returning: true) }
        }
    }

    /// How many downloads the client abandoned (the generated server's count).
    public var abandonedDownloads: Int { state.withLock { $0.abandonedDownloads } }
}
