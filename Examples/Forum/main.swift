import Foundation
import Signals
import Transit
import TransitTesting

// `swift run forum` — the PostService of the README as a runnable program.
//
// By default it starts an embedded forum API on 127.0.0.1 and shows, step by step, what Transit
// does: requests sent, a 401 answered by ONE token refresh shared by concurrent requests, a 429
// answered by waiting what the server asked, posts decoded, a download, an HTTP cache, and a
// second service whose policies are declared once on its client (step 8), a live feed of Server-Sent
// Events that resumes after a dropped connection (step 9), each narrated from
// the client's lifecycle events. `--base-url URL` runs the same service against a real server
// instead (any JSONPlaceholder-style API with GET /posts).

let usage = """
    usage: forum [--base-url URL] [--token ACCESS_TOKEN]

      (no options)       run against an embedded forum API on 127.0.0.1 and narrate each step
      --base-url URL     run the same PostService against a real server (GET URL/posts)
      --token TOKEN      the bearer token to send with --base-url (default: none needed)
    """

var baseURLArgument: String?
var tokenArgument: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--base-url":
        guard let value = arguments.popFirst() else { print(usage); exit(2) }
        baseURLArgument = value
    case "--token":
        guard let value = arguments.popFirst() else { print(usage); exit(2) }
        tokenArgument = value
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        print("unknown argument \(argument)\n\(usage)")
        exit(2)
    }
}

let narrator = Narrator()
/// The requests of step 8's client, told by their own narrator.
var policyRequests = 0
let client = HTTPClient { $0.monitors = [narrator] }
let failures = Guarded<[String]>([])

/// Records a failed expectation; the program exits non-zero if there is any.
func check(_ condition: Bool, _ message: String) {
    if condition {
        narrator.say("✓ \(message)")
    } else {
        narrator.say("✗ expected: \(message)")
        failures.withLock { $0.append(message) }
    }
}

func describe(_ result: Result<[Post], any Error>) -> String {
    switch result {
    case .success(let posts):
        let titles = posts.prefix(2).map { "\"\($0.title)\"" }.joined(separator: ", ")
        return "\(posts.count) posts decoded" + (titles.isEmpty ? "" : ": \(titles)\(posts.count > 2 ? ", …" : "")")
    case .failure(let error as any HTTPError):
        return "failed: \(error)"
    case .failure(let error):
        return "failed: \(error.localizedDescription)"
    }
}

func posts(_ signal: Signal<Result<[Post], any Error>, Never>) async -> Result<[Post], any Error> {
    do {
        return try await signal.firstValue()
    } catch {
        return .failure(error)
    }
}

if let baseURL = baseURLArgument {
    // The same service, against a real server.
    print("Transit forum example — against \(baseURL)")
    let auth = AuthService(baseURL: baseURL, client: client)
    let tokens = TokenStore(token: AuthToken(accessToken: tokenArgument ?? "no-token")) { current in
        auth.refresh(current)
    }
    let service = LivePostService(baseURL: baseURL, client: client, tokens: tokens)

    narrator.heading("GET /posts")
    let all = await posts(service.posts)
    narrator.say(describe(all))
    narrator.heading("GET /posts?userId=1")
    let first = await posts(service.posts(byUser: 1))
    narrator.say(describe(first))
    if case .failure = all { failures.withLock { $0.append("GET /posts") } }
    if case .failure = first { failures.withLock { $0.append("GET /posts?userId=1") } }
} else {
    let forum = ForumServer()
    do {
        try forum.start()
    } catch {
        print("could not start the embedded forum API: \(error)")
        exit(1)
    }
    defer { forum.stop() }
    print("Transit forum example")
    print("Embedded forum API on \(forum.baseURL) — bearer tokens that expire, 429s with Retry-After now and then.")

    let auth = AuthService(baseURL: forum.baseURL, client: client)
    narrator.heading("1. Log in")
    let token: AuthToken
    do {
        token = try await auth.logIn(username: "ada", password: "lovelace").firstValue()
        narrator.say("✓ logged in as ada: access token \(token.accessToken)")
    } catch {
        print("login failed: \(error)")
        exit(1)
    }

    let tokens = TokenStore(token: token) { current in
        auth.refresh(current)
    }
    let service = LivePostService(baseURL: forum.baseURL, client: client, tokens: tokens)

    narrator.heading("2. Fetch the posts")
    let firstFetch = await posts(service.posts)
    narrator.say(describe(firstFetch))
    check((try? firstFetch.get().count) == ForumServer.posts.count, "all \(ForumServer.posts.count) posts decoded")

    narrator.heading("3. The access token expires while three requests run at once")
    forum.expireAccessTokens()
    narrator.say("[server] every access token has expired")
    let refreshesBefore = forum.refreshCount
    async let user1 = posts(service.posts(byUser: 1))
    async let user2 = posts(service.posts(byUser: 2))
    async let user3 = posts(service.posts(byUser: 3))
    let concurrent = await [user1, user2, user3]
    for (index, result) in concurrent.enumerated() {
        narrator.say("user \(index + 1): \(describe(result))")
    }
    check(concurrent.allSatisfy { (try? $0.get().count) == 2 }, "three requests succeeded with the new token")
    check(forum.refreshCount - refreshesBefore == 1, "the server saw exactly one refresh for three 401s")

    narrator.heading("4. The server rate-limits: 429 with Retry-After: 2")
    forum.rateLimitNextRequest(retryAfter: 2)
    let waitStarted = Date()
    let limited = await posts(service.posts)
    let waited = Date().timeIntervalSince(waitStarted)
    narrator.say(describe(limited) + String(format: " after %.1f s", waited))
    check((try? limited.get().count) == ForumServer.posts.count && waited >= 2, "waited what the server asked, then succeeded")

    narrator.heading("5. The server asks for 30 s, more than the 5 s this service will wait")
    forum.rateLimitNextRequest(retryAfter: 30)
    let failFastStarted = Date()
    let refused = await posts(service.posts)
    narrator.say(describe(refused))
    if case .failure(let error) = refused, let limit = error as? HTTPClientError, case .tooManyRequests(let retryAfter, _) = limit {
        check(retryAfter == .seconds(30) && Date().timeIntervalSince(failFastStarted) < 2, "failed at once with .tooManyRequests(retryAfter: 30) instead of retrying early")
    } else {
        check(false, "failed at once with .tooManyRequests(retryAfter: 30)")
    }

    narrator.heading("6. Download the forum archive: redirected to a CDN on another origin, streamed to disk")
    let cdn = AttachmentCDN()
    do {
        try cdn.start()
    } catch {
        print("could not start the embedded CDN: \(error)")
        exit(1)
    }
    defer { cdn.stop() }
    forum.redirectArchive(to: cdn.archiveURL)
    narrator.say("[server] /attachments/archive redirects to \(cdn.archiveURL.absoluteString)")
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-forum-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let destination = folder.appendingPathComponent("forum-archive.bin")
    let bar = ProgressBar()
    let attachments = AttachmentService(baseURL: forum.baseURL, client: client, tokens: tokens)
    var downloaded: DownloadedFile?
    do {
        for try await event in attachments.archive(to: destination).values {
            switch event {
            case .progress(let progress): bar.update(progress)
            case .completed(let file): downloaded = file
            }
        }
    } catch {
        narrator.say("download failed: \(error)")
    }
    let onDisk = try? Data(contentsOf: destination)
    check(downloaded?.byteCount == Int64(AttachmentCDN.archiveSize) && onDisk == AttachmentCDN.archive,
          "the 4 MiB archive arrived whole, written to disk as it streamed")
    check(cdn.requestCount == 1 && cdn.credentialHeadersSeen.isEmpty,
          "the redirect to the CDN arrived without the bearer token (credentials stay with their origin)")

    narrator.heading("6b. A download loses its connection half-way and resumes where it stopped")
    await demonstrateResumedDownload(narrator: narrator, check: check)

    narrator.heading("7. An HTTP cache in front of the transport: a hit, a 304, a stale answer while the server is down")
    await demonstrateCaching(narrator: narrator, check: check)

    narrator.heading("8. A second service declares its policies once, on its client")
    let policies = narrator.sibling(showsTokens: false)
    await demonstratePolicies(forum: forum, auth: auth, narrator: policies, check: check)
    policyRequests = policies.requestCount

    narrator.heading("9. A live feed of new posts: the server drops the connection mid-event, the client resumes")
    await demonstrateLiveFeed(forum: forum, auth: auth, narrator: narrator, check: check)
}

let requests = narrator.requestCount + policyRequests
print("\n\(requests) requests sent, \(narrator.refreshCount) token refresh\(narrator.refreshCount == 1 ? "" : "es").")
let failed = failures.withLock { $0 }
if failed.isEmpty {
    print("Done.")
} else {
    print("Some steps did not go as expected: \(failed.joined(separator: "; "))")
    exit(1)
}
