// Generated from README.md by scripts/readme-snippets; do not edit. CI checks that it is current.
// swift-format-ignore-file
import Foundation
import Signals
import Transit

// README.md, Swift block 1 (line 31)

struct Post: Codable, Sendable { let id: Int; let title: String }

protocol PostService { var posts: Signal<Result<[Post], any Error>, Never> { get } }

func makeForumClient(tokens: TokenStore, monitors: [any HTTPEventMonitor]) -> HTTPClient {
    HTTPClient(transport: URLSessionTransport.shared) {
        $0.monitors = monitors                                          // one way to observe
        $0.rateLimiter = RateLimiter(requestsPerSecond: 20, burst: 8)   // excess requests wait
        $0.cooldowns = Cooldowns(maxWait: .seconds(3))                  // one 429 pauses the rest
        $0.coalescesRequests = true                                     // identical GETs share one
        $0.failover = HostFailover(origins: ["https://a.example.com", "https://b.example.com"])
        $0.authorizer = tokens                                          // token in, one renewal on 401
    }
}

struct LivePostService: RESTAPI, PostService {
    let baseURL: String          // "https://a.example.com/api"
    let client: HTTPClient       // its policies, transport, default headers, monitors
    static let retryPolicy = RetryPolicy(maxAttempts: 3, budget: RetryBudget(ratio: 0.1))

    var posts: Signal<Result<[Post], any Error>, Never> {
        return get(endpoint: "posts") { $0.receivingJSON() }
            .catchHTTPErrors()                      // every status >= 400 becomes an error
            .retry(Self.retryPolicy)                // transient failures, within a shared budget
            .map(\.data)
            .decode([Post].self, decoder: JSONDecoder())
            .mapToResult()
    }
}

// README.md, Swift block 2 (line 73)
@MainActor
final class PostsViewModel {
    private let service: any PostService
    private let bag = CancellationBag()     // cancels every request when the view model goes
    private(set) var posts: [Post] = []

    init(service: any PostService) { self.service = service }

    func load() {
        service.posts
            .receive(on: DispatchQueue.main)
            .sink { [weak self] result in
                MainActor.assumeIsolated { self?.show(result) }
            }
            .store(in: bag)
    }

    func loadAsync() async {                    // or with Swift concurrency:
        for await result in service.posts.values { show(result) }
    }

    private func show(_ result: Result<[Post], any Error>) {
        if case .success(let posts) = result { self.posts = posts }
    }
}

// README.md, Swift block 3 (line 104)
func makeTokens(initial: AuthToken, renew: @escaping @Sendable (AuthToken) -> Signal<AuthToken, any Error>) -> TokenStore {
    TokenStore(token: initial, scope: CredentialScope(hosts: ["a.example.com", "b.example.com"])) { current in
        renew(current)          // e.g. POST /auth/token with the refresh token
    }
}

// README.md, Swift block 4 (line 119)
struct ChainPostService: RESTAPI, PostService {
    let baseURL: String
    let client: HTTPClient       // here without an authorizer or cooldowns
    let tokens: TokenStore

    var posts: Signal<Result<[Post], any Error>, Never> {
        return get(endpoint: "posts") { request in
            try request                              // helpers that can refuse input throw
                .addingBearerAuthorization(accessToken: tokens.current.accessToken)
                .receivingJSON()
        }
        .catchHTTPErrors()
        .retryWithFreshToken(from: tokens)           // 401 → one shared refresh → replay once
        .respondToRateLimiting(maxWait: .seconds(5)) // 429 → wait Retry-After → replay once
        .map(\.data)
        .decode([Post].self, decoder: JSONDecoder())
        .mapToResult()
    }
}
