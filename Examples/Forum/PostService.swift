import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// What the rest of an app sees: posts, as results that never fail the stream.
protocol PostService {
    var posts: Signal<Result<[Post], any Error>, Never> { get }

    func posts(byUser userId: Int) -> Signal<Result<[Post], any Error>, Never>
}

/// The live service: bearer tokens injected just in time, one shared refresh on 401, and the
/// server's Retry-After honoured on 429. Every line of the chain re-runs on a retry, so the
/// retried request carries the fresh token.
struct LivePostService: RESTAPI, PostService {
    let baseURL: String
    let client: HTTPClient
    let tokens: TokenStore

    var posts: Signal<Result<[Post], any Error>, Never> {
        // `return` is needed: a computed property's body that starts with `get(` is read by
        // Swift as a getter declaration.
        return get(endpoint: "posts") { request in
            try request
                .addingBearerAuthorization(accessToken: tokens.current.accessToken)
                .receivingJSON()
        }
        .catchHTTPErrors()
        .retryWithFreshToken(from: tokens)
        .respondToRateLimiting(maxWait: .seconds(5))
        .map(\.data)
        .decode([Post].self, decoder: JSONDecoder())
        .mapToResult()
    }

    func posts(byUser userId: Int) -> Signal<Result<[Post], any Error>, Never> {
        get(endpoint: "posts") { request in
            try request
                .addingQueryItem(name: "userId", value: String(userId))
                .addingBearerAuthorization(accessToken: tokens.current.accessToken)
                .receivingJSON()
        }
        .catchHTTPErrors()
        .retryWithFreshToken(from: tokens)
        .respondToRateLimiting(maxWait: .seconds(5))
        .map(\.data)
        .decode([Post].self, decoder: JSONDecoder())
        .mapToResult()
    }
}

/// The token endpoints: log in once, then renew with the refresh token.
struct AuthService: RESTAPI {
    let baseURL: String
    let client: HTTPClient

    func logIn(username: String, password: String) -> Signal<AuthToken, any Error> {
        post(endpoint: "auth/login", body: .json(LoginRequest(username: username, password: password))) { $0.receivingJSON() }
            .catchHTTPErrors()
            .map(\.data)
            .decode(TokenResponse.self, decoder: JSONDecoder())
            .map(AuthToken.init)
    }

    func refresh(_ token: AuthToken) -> Signal<AuthToken, any Error> {
        post(endpoint: "auth/token", body: .json(RefreshRequest(refreshToken: token.refreshToken ?? ""))) { $0.receivingJSON() }
            .catchHTTPErrors()
            .map(\.data)
            .decode(TokenResponse.self, decoder: JSONDecoder())
            .map(AuthToken.init)
    }
}

extension AuthToken {
    init(_ response: TokenResponse) {
        self.init(
            accessToken: response.accessToken,
            refreshToken: response.refreshToken,
            expiresAt: Date(timeIntervalSinceNow: TimeInterval(response.expiresIn))
        )
    }
}
