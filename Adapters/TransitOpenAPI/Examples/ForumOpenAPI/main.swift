import ForumAPI
import ForumServers
import Foundation
import OpenAPIRuntime
import Signals
import Transit
import TransitAsyncHTTPClient
import TransitOpenAPI

// `swift run --package-path Adapters/TransitOpenAPI forum-openapi [--transport ahc|urlsession]`
//
// The README's PostService, written on the client swift-openapi-generator makes from
// openapi.yaml, sent through a Transit HTTPClient against the embedded forum on 127.0.0.1: the
// client's authoriser renews an expired token once for three requests at once, a 429 is waited
// out, a 503 is retried, a post is created with JSON, a file goes up as multipart/form-data and
// comes back streamed. It exits non-zero if any step does not happen as described.

/// What a view model asks for, whatever builds the requests (the README's protocol).
protocol PostService: Sendable {
    var posts: Signal<Result<[Components.Schemas.Post], any Error>, Never> { get }
}

/// The service on the generated client: the operation is the request, the client's policies and
/// the transport's are the resilience, the generated types are the decoding.
struct GeneratedPostService: PostService {
    let forum: Client

    var posts: Signal<Result<[Components.Schemas.Post], any Error>, Never> {
        Signal(operation: { try await forum.listPosts().ok.body.json })
            .mapToResult()
    }
}

let usage = "usage: forum-openapi [--transport ahc|urlsession]"
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

let server = ForumLoopbackServer()
do {
    try server.start()
} catch {
    print("✗ could not start the embedded server: \(error)")
    exit(1)
}
let forum = server.forum
let network: any HTTPTransport = transportName == "ahc" ? AsyncHTTPClientTransport.shared : URLSessionTransport.shared
print("The generated forum client on Transit over \(transportName == "ahc" ? "AsyncHTTPClient" : "URLSession")")

var failures: [String] = []
@MainActor func check(_ condition: Bool, _ message: String) {
    print(condition ? "✓ \(message)" : "✗ expected: \(message)")
    if !condition { failures.append(message) }
}

// Sign-in and renewal go through a client of their own, without the authoriser.
let signIn = Client(serverURL: server.baseURL, transport: TransitClientTransport(client: HTTPClient(transport: network)))
let tokens: TokenStore
do {
    let issued = try await signIn.login(body: .json(.init(username: "ada", password: "lovelace"))).ok.body.json
    tokens = TokenStore(
        token: AuthToken(accessToken: issued.accessToken, refreshToken: issued.refreshToken),
        scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
    ) { current in
        Signal(operation: {
            let renewed = try await signIn.refreshToken(body: .json(.init(refreshToken: current.refreshToken ?? ""))).ok.body.json
            return AuthToken(accessToken: renewed.accessToken, refreshToken: renewed.refreshToken)
        })
    }
} catch {
    print("✗ could not sign in: \(error)")
    exit(1)
}

// The three lines that put a generated client on Transit: one HTTPClient, one transport, one Client.
let http = HTTPClient(transport: network) { $0.authorizer = tokens }
let transport = TransitClientTransport(client: http) {
    $0.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100))
    $0.maxWaitOn429 = .seconds(5)
}
let client = Client(serverURL: server.baseURL, transport: transport)
let service = GeneratedPostService(forum: client)

// 1. The posts, as the README's view model reads them.
var first: Result<[Components.Schemas.Post], any Error>?
for await result in service.posts.values { first = result }
if case .success(let posts)? = first {
    check(posts.count == ForumState.initialPosts.count, "\(posts.count) posts decoded by the generated types")
} else {
    check(false, "the posts, but got \(String(describing: first))")
}

// 2. Every access token expires; three requests at once meet 401 and share one renewal.
forum.expireAccessTokens()
let refreshesBefore = forum.refreshCount
let counts = await withTaskGroup(of: Int.self) { group in
    for _ in 0..<3 {
        group.addTask { (try? await client.listPosts().ok.body.json.count) ?? -1 }
    }
    var counts: [Int] = []
    for await count in group { counts.append(count) }
    return counts
}
check(counts.allSatisfy { $0 == ForumState.initialPosts.count }, "three concurrent requests after the token expired all got the posts")
check(forum.refreshCount == refreshesBefore + 1, "one refresh for the three 401s (\(forum.refreshCount - refreshesBefore))")

// 3. A 429 with Retry-After: 1 is waited out, then the operation is sent again.
forum.rateLimitNextRequests(retryAfter: 1)
let waitStart = ContinuousClock.now
let afterLimit = try? await client.listPosts().ok.body.json
check(afterLimit != nil && ContinuousClock.now - waitStart >= .seconds(1), "the 429 was waited out (\(ContinuousClock.now - waitStart))")

// 4. Two 503s, then the status: retried within the policy's three attempts.
forum.failStatus(2)
let status = try? await client.getStatus().ok.body.json
check(status?.ok == true && forum.hits("getStatus") == 3, "two 503s retried, the third attempt answered (\(forum.hits("getStatus")) requests)")

// 5. A post created with JSON.
let created = try? await client.createPost(body: .json(.init(title: "Generated", body: "Sent through Transit"))).created.body.json
check(created?.title == "Generated", "a post created with JSON (id \(created?.id ?? -1))")

// 6. A file uploaded as multipart/form-data, then downloaded as a stream.
let file = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
let parts = try? await client.uploadAttachment(body: .multipartForm([
    .caption(.init(payload: .init(body: HTTPBody("release notes")))),
    .file(.init(payload: .init(body: HTTPBody(file)), filename: "notes.bin")),
])).created.body.json
check(parts?.map(\.name) == ["caption", "file"] && parts?.last?.bytes == file.count, "multipart upload: \(parts?.map { "\($0.name) \($0.bytes) B" } ?? [])")
var downloaded = 0
var chunks = 0
do {
    let body = try await client.downloadAttachment(path: .init(name: "notes.bin")).ok.body.binary
    for try await chunk in body {
        downloaded += chunk.count
        chunks += 1
    }
} catch {
    print("  download failed: \(error)")
}
check(downloaded == file.count, "streamed download: \(downloaded) bytes in \(chunks) chunks")

server.stop()
exit(failures.isEmpty ? 0 : 1)
