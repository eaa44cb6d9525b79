import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitTesting

/// The live feed: new posts pushed as Server-Sent Events. The client's authorizer adds the bearer
/// token to every connection and renews it on a 401, before connecting again.
struct LiveFeedService: RESTAPI {
    let baseURL: String
    let client: HTTPClient

    /// The new posts, decoded, one per `post` event; the stream reconnects with `Last-Event-ID`
    /// when the connection drops, and ends when the server answers 204.
    var newPosts: Signal<Post, any Error> {
        var options = EventStreamOptions()
        options.reconnection?.baseDelay = .milliseconds(100)
        return events(endpoint: "live", options: options)
            .filter { $0.event == "post" }
            .tryMap { try JSONDecoder().decode(Post.self, from: Data($0.data.utf8)) }
    }
}

extension ForumServer {
    /// The posts `GET /live` pushes, in order; each event's ID is the post's.
    static let livePosts: [Post] = [
        Post(userId: 1, id: 7, title: "Live from the forum", body: "Pushed as it happened."),
        Post(userId: 2, id: 8, title: "Last-Event-ID", body: "The client says where it was."),
        Post(userId: 3, id: 9, title: "Dropped mid-event", body: "A half event is never delivered."),
        Post(userId: 1, id: 10, title: "Resumed", body: "The server sends what followed."),
        Post(userId: 2, id: 11, title: "Exactly once", body: "Nothing lost, nothing repeated."),
    ]

    /// The `Last-Event-ID` of each `GET /live`, in order (`nil` for none).
    private static let liveFeedLog = Guarded<[String?]>([])

    /// The `Last-Event-ID` of each `GET /live` so far, in order (`nil` for none).
    var liveFeedRequests: [String?] { Self.liveFeedLog.withLock { $0 } }

    /// `GET /live` with `Authorization: Bearer <access token>`: the live posts as
    /// `text/event-stream`, after the `Last-Event-ID` the client sends (all of them without one),
    /// or 401 for an unknown or expired token. A first connection (no `Last-Event-ID`) is dropped
    /// in the middle of its third event; a client that has every post is answered 204 (no more
    /// events).
    static func liveFeed(_ request: LoopbackRequest, state: Guarded<State>) -> LoopbackResponse {
        let bearer = request.value(forHTTPHeaderField: "Authorization")
            .flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let now = Date()
        let authorised = state.withLock { state in bearer.flatMap { state.accessTokens[$0] }.map { $0 > now } ?? false }
        guard authorised else { return .json(#"{"error":"invalid_token"}"#, status: 401) }
        let lastEventID = request.value(forHTTPHeaderField: "Last-Event-ID")
        liveFeedLog.withLock { $0.append(lastEventID) }
        let after = lastEventID.flatMap { Int($0) }
        let pending = livePosts.filter { $0.id > (after ?? 0) }
        guard !pending.isEmpty else { return .status(204) }
        let events = pending.map { post -> Data in
            let json = (try? JSONEncoder().encode(post)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return Data("id: \(post.id)\nevent: post\ndata: \(json)\n\n".utf8)
        }
        let headers = ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]
        var steps: [LoopbackStep] = [.send(Data(": live posts\nretry: 200\n\n".utf8))]
        if after == nil {
            steps += events.prefix(2).map { .send($0) }
            steps += [.send(events[2].prefix(events[2].count / 2)), .close]
        } else {
            steps += events.map { .send($0) }
        }
        return .scripted(headers: headers, steps)
    }
}

/// Step 9: the client follows the live feed; the server drops the first connection in the middle
/// of an event, and the client resumes from the last event it had.
/// The access token it starts with expires before the feed opens: the first connection is answered
/// 401, and the client's authorizer renews the token once before connecting again.
func demonstrateLiveFeed(forum: ForumServer, auth: AuthService, narrator: Narrator, check: (Bool, String) -> Void) async {
    guard let token = try? await auth.logIn(username: "ada", password: "lovelace").firstValue() else {
        check(false, "signed in for the live feed")
        return
    }
    forum.expireAccessTokens()
    narrator.say("[server] every access token has expired")
    let tokens = TokenStore(token: token, scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)) { current in
        auth.refresh(current)
    }
    let client = HTTPClient {
        $0.monitors = [narrator]
        $0.authorizer = tokens
    }
    let feed = LiveFeedService(baseURL: forum.baseURL, client: client)
    var received: [Post] = []
    do {
        for try await post in feed.newPosts.values {
            narrator.say("event \(post.id): \"\(post.title)\"")
            received.append(post)
        }
        narrator.say("the server answered 204: no more events")
    } catch {
        narrator.say("the live feed failed: \(error)")
    }
    let resumedFrom = forum.liveFeedRequests.compactMap { $0 }
    narrator.say("[server] connections sent Last-Event-ID: \(forum.liveFeedRequests.map { $0 ?? "none" }.joined(separator: ", "))")
    check(received == ForumServer.livePosts, "every live post arrived exactly once, in order (\(received.map(\.id)))")
    check(resumedFrom.first == "8", "after the drop the client resumed from the last complete event (Last-Event-ID: 8)")
}
