import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitAsyncHTTPClient
import TransitTesting

// `swift run --package-path Adapters/TransitAsyncHTTPClient forum-ahc [--transport ahc|urlsession]`
//
// The README's PostService chain on either transport, against an embedded forum API on
// 127.0.0.1: the first GET meets an expired token (401 → one refresh → replay), the replay meets
// a rate limit (429, Retry-After: 1 → wait → replay), and the posts are decoded. It exits
// non-zero if any step does not happen as described.

struct Post: Codable, Sendable {
    let userId: Int
    let id: Int
    let title: String
    let body: String
}

struct TokenResponse: Codable, Sendable {
    let accessToken: String
    let refreshToken: String
}

struct LivePostService: RESTAPI {
    let baseURL: String
    let client: Transit.HTTPClient
    let tokens: TokenStore

    var posts: Signal<Result<[Post], any Error>, Never> {
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
}

let usage = "usage: forum-ahc [--transport ahc|urlsession]"
var transportName = "ahc"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--transport":
        guard let value = arguments.popFirst(), ["ahc", "urlsession"].contains(value) else { print(usage); exit(2) }
        transportName = value
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        print("unknown argument \(argument)\n\(usage)")
        exit(2)
    }
}

let transport: any HTTPTransport = transportName == "ahc" ? AsyncHTTPClientTransport.shared : URLSessionTransport.shared
let client = Transit.HTTPClient(transport: transport)
print("Transit on \(transportName == "ahc" ? "AsyncHTTPClient (AsyncHTTPClientTransport)" : "URLSession (URLSessionTransport)")")

// The forum API: GET /posts wants "Bearer fresh"; the first authorised GET is rate limited.
let server = LoopbackServer { request in
    switch (request.method, request.path) {
    case ("POST", "/auth/token"):
        return .json(#"{"accessToken":"fresh","refreshToken":"r2"}"#)
    case ("GET", "/posts") where request.value(forHTTPHeaderField: "Authorization") != "Bearer fresh":
        return .status(401, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
    case ("GET", "/posts"):
        return .json(#"[{"userId":1,"id":1,"title":"Hello","body":"First post"},{"userId":2,"id":2,"title":"Again","body":"Second"}]"#)
    default:
        return .status(404)
    }
}
server.enqueue(.status(429, headers: ["Retry-After": "1"])) {
    $0.path == "/posts" && $0.value(forHTTPHeaderField: "Authorization") == "Bearer fresh"
}
do {
    try server.start()
} catch {
    print("✗ could not start the embedded server: \(error)")
    exit(1)
}

let baseURL = server.url().absoluteString
let tokens = TokenStore(token: AuthToken(accessToken: "expired", refreshToken: "r1")) { current in
    var request = URLRequest(url: server.url("/auth/token"))
    request.httpMethod = "POST"
    request.httpBody = Data(#"{"refreshToken":"\#(current.refreshToken ?? "")"}"#.utf8)
    return client.send(request).catchHTTPErrors().tryMap { response in
        let body = try JSONDecoder().decode(TokenResponse.self, from: response.data)
        return AuthToken(accessToken: body.accessToken, refreshToken: body.refreshToken)
    }
}
let service = LivePostService(baseURL: baseURL, client: client, tokens: tokens)

var failures: [String] = []
@MainActor func check(_ condition: Bool, _ message: String) {
    print(condition ? "✓ \(message)" : "✗ expected: \(message)")
    if !condition { failures.append(message) }
}

let start = ContinuousClock.now
var result: Result<[Post], any Error>?
for await value in service.posts.values {
    result = value
}
let elapsed = ContinuousClock.now - start
switch result {
case .success(let posts)?:
    let titles = posts.map { $0.title }
    check(titles == ["Hello", "Again"], "2 posts decoded: \(titles)")
case .failure(let error)?:
    check(false, "the posts, but the chain failed with \(error)")
case nil:
    check(false, "a result")
}
let requests = server.requests.map { "\($0.method) \($0.path)" }
print("  requests: \(requests.joined(separator: ", "))")
check(requests == ["GET /posts", "POST /auth/token", "GET /posts", "GET /posts"], "401 → one refresh → replay → 429 → replay")
check(elapsed >= .seconds(1), "the 429's Retry-After (1 s) was waited (took \(elapsed))")
check(tokens.current.accessToken == "fresh", "the store holds the refreshed token")
server.stop()
exit(failures.isEmpty ? 0 : 1)
