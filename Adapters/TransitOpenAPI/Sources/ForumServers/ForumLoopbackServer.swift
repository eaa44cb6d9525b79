import Foundation
import Transit
import TransitTesting

/// The forum's API on Transit's loopback server (a real HTTP/1.1 server on 127.0.0.1, an
/// ephemeral port): the routes of the forum example, written by hand as the example writes them.
///
/// `GET /attachments/endless` sends its head and a first chunk, then holds the body until the
/// client goes away (``clientClosedConnections`` counts it).
public final class ForumLoopbackServer: Sendable {
    /// The forum's behaviour and switches.
    public let forum: ForumState
    private let server = LoopbackServer()
    let endless = LoopbackGate("endless download")

    /// A server for `forum`; ``start()`` it.
    public init(forum: ForumState = ForumState()) {
        self.forum = forum
        server.handler = { [forum, endless] request in Self.handle(request, forum: forum, endless: endless) }
    }

    deinit { endless.open() }

    /// Starts listening on an ephemeral port of 127.0.0.1.
    public func start() throws { try server.start() }

    /// Stops the server.
    public func stop() {
        endless.open()
        server.stop()
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { server.url() }

    /// How many connections ended because the client closed them.
    public var clientClosedConnections: Int { server.clientClosedConnectionCount }

    /// Waits (real time, at most 30 s) until `condition` holds, re-checked whenever the server's
    /// state changes.
    public func waitUntil(_ condition: @Sendable () -> Bool) async -> Bool {
        await server.waitUntil(condition)
    }

    private static let unauthorized = LoopbackResponse.json(
        #"{"error":"invalid_token"}"#, status: 401, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#]
    )

    private static func handle(_ request: LoopbackRequest, forum: ForumState, endless: LoopbackGate) -> LoopbackResponse {
        let path = request.path
        switch (request.method, path) {
        case ("POST", "/auth/login"):
            struct Login: Decodable { let username: String; let password: String }
            guard let login = try? JSONDecoder().decode(Login.self, from: request.body) else { return .json(#"{"error":"invalid_request"}"#, status: 400) }
            guard let tokens = forum.login(username: login.username, password: login.password) else { return .json(#"{"error":"invalid_grant"}"#, status: 401) }
            return tokenResponse(tokens)
        case ("POST", "/auth/token"):
            struct Refresh: Decodable { let refreshToken: String }
            guard let refresh = try? JSONDecoder().decode(Refresh.self, from: request.body) else { return .json(#"{"error":"invalid_request"}"#, status: 400) }
            guard let tokens = forum.refresh(refresh.refreshToken) else { return .json(#"{"error":"invalid_grant"}"#, status: 401) }
            return tokenResponse(tokens)
        default:
            break
        }
        let operation = operationName(request.method, path)
        forum.hit(operation)
        guard forum.isAuthorized(request.value(forHTTPHeaderField: "Authorization")) else { return unauthorized }
        switch (request.method, path) {
        case ("GET", "/posts"):
            if let seconds = forum.takeRateLimit() {
                return .json(#"{"error":"slow_down"}"#, status: 429, headers: ["Retry-After": "\(seconds)"])
            }
            let userId = request.queryItems.first { $0.name == "userId" }?.value.flatMap { Int($0) }
            guard let body = try? JSONEncoder().encode(forum.posts(userId: userId)) else { return .status(500) }
            var response = LoopbackResponse.status(200, headers: ["Content-Type": "application/json", "Cache-Control": ForumState.postsCacheControl], body: body)
            response.headers += ForumState.postLinks.map { HTTPField(name: "Link", value: $0) }
            return response
        case ("POST", "/posts"):
            struct Draft: Decodable { let title: String; let body: String }
            guard let draft = try? JSONDecoder().decode(Draft.self, from: request.body) else { return .json(#"{"error":"invalid_request"}"#, status: 400) }
            let post = forum.createPost(title: draft.title, body: draft.body)
            guard let body = try? JSONEncoder().encode(post) else { return .status(500) }
            return .status(201, headers: ["Content-Type": "application/json"], body: body)
        case ("POST", "/attachments"):
            struct Received: Encodable { let name: String; let filename: String?; let bytes: Int }
            guard let contentType = request.value(forHTTPHeaderField: "Content-Type"),
                  let parts = try? MultipartFormDataParser.parse(request.body, contentType: contentType)
            else { return .json(#"{"error":"not multipart/form-data"}"#, status: 400) }
            for part in parts where part.name == "file" {
                forum.storeAttachment(part.body, name: part.filename ?? "file")
            }
            let received = parts.map { Received(name: $0.name ?? "", filename: $0.filename, bytes: $0.body.count) }
            guard let body = try? JSONEncoder().encode(received) else { return .status(500) }
            return .status(201, headers: ["Content-Type": "application/json"], body: body)
        case ("GET", "/attachments/endless"):
            return .scripted(status: 200, headers: ["Content-Type": "application/octet-stream"], contentLength: nil, [
                .head, .send(Data(repeating: 0x2A, count: 1024)), .wait(endless),
            ])
        case ("GET", _) where path.hasPrefix("/attachments/"):
            let name = String(path.dropFirst("/attachments/".count)).removingPercentEncoding ?? ""
            guard let data = forum.attachment(name) else { return .json(#"{"error":"not_found"}"#, status: 404) }
            let pieces = stride(from: 0, to: data.count, by: 64 << 10).map { data[$0..<min($0 + (64 << 10), data.count)] }
            return .chunked(pieces.map { Data($0) }, headers: ["Content-Type": "application/octet-stream"])
        case ("GET", "/status"):
            forum.recordTrace(request.headers.filter { $0.name.caseInsensitiveCompare("X-Forum-Trace") == .orderedSame }.map(\.value))
            let failure = forum.takeStatusFailure()
            if failure.fails {
                return .json(#"{"error":"overloaded"}"#, status: 503, headers: failure.retryAfter.map { ["Retry-After": "\($0)"] } ?? [:])
            }
            return .json(#"{"ok":true}"#)
        default:
            return .json(#"{"error":"not_found"}"#, status: 404)
        }
    }

    /// The operation id of a request, for ``ForumState/hits(_:)``.
    static func operationName(_ method: String, _ path: String) -> String {
        switch (method, path) {
        case ("GET", "/posts"): "listPosts"
        case ("POST", "/posts"): "createPost"
        case ("POST", "/attachments"): "uploadAttachment"
        case ("GET", "/status"): "getStatus"
        case ("GET", _) where path.hasPrefix("/attachments/"): "downloadAttachment"
        default: "\(method) \(path)"
        }
    }

    private static func tokenResponse(_ tokens: ForumState.Tokens) -> LoopbackResponse {
        let json = #"{"accessToken":"\#(tokens.accessToken)","refreshToken":"\#(tokens.refreshToken)","expiresIn":\#(tokens.expiresIn)}"#
        return .json(json)
    }
}
