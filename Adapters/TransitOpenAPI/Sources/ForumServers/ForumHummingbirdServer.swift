import ForumAPI
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime

/// The forum's API as the generated server on Hummingbird, on 127.0.0.1 and an ephemeral port: a
/// real framework peer for the loopback server, with the same behaviour (``ForumState``).
///
/// The bearer token is checked, the requests counted and the repeated `Link` fields added by a
/// server middleware, since the document declares neither the security scheme nor those fields.
/// `GET /attachments/endless` sends a chunk every 20 ms until the client goes away.
public final class ForumHummingbirdServer: ForumServer {
    /// The forum's behaviour and switches.
    public let forum: ForumState
    /// `http://127.0.0.1:<port>`.
    public let baseURL: URL
    private let task: Task<Void, Never>

    private init(forum: ForumState, baseURL: URL, task: Task<Void, Never>) {
        self.forum = forum
        self.baseURL = baseURL
        self.task = task
    }

    /// Starts a server for `forum` and returns once it listens.
    public static func start(forum: ForumState = ForumState()) async throws -> ForumHummingbirdServer {
        let router = Router()
        try Handler(forum: forum).registerHandlers(on: router, serverURL: URL(string: "/")!, middlewares: [Guard(forum: forum)])
        let (ports, port) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "forum-hummingbird")
        logger.logLevel = .critical
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                port.yield(channel.localAddress?.port ?? 0)
                port.finish()
            },
            logger: logger
        )
        let task = Task {
            try? await app.runService(gracefulShutdownSignals: [])
            port.finish()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0, let url = URL(string: "http://127.0.0.1:\(bound)") else {
            task.cancel()
            throw CancellationError()
        }
        return ForumHummingbirdServer(forum: forum, baseURL: url, task: task)
    }

    /// Stops the server and waits until it has.
    public func shutdown() async {
        task.cancel()
        await task.value
    }

    /// Returns `true` once the endless download sent its first chunk, `false` after 30 s.
    public func waitUntilEndlessDownloadStarted() async -> Bool {
        await forum.waitUntilDownloadsStarted(1)
    }

    /// Returns `true` once the endless download's client went away, `false` after 30 s.
    public func waitUntilEndlessDownloadAbandoned() async -> Bool {
        await forum.waitUntilDownloadsAbandoned(1)
    }
}

/// Bearer tokens, request counts, and what the document does not declare.
private struct Guard: ServerMiddleware {
    let forum: ForumState

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if operationID == Operations.login.id || operationID == Operations.refreshToken.id {
            return try await next(request, body, metadata)
        }
        forum.hit(operationID)
        guard forum.isAuthorized(request.headerFields[.authorization]) else {
            var fields = HTTPFields()
            fields[.wwwAuthenticate] = #"Bearer error="invalid_token""#
            fields[.contentType] = "application/json"
            return (HTTPResponse(status: .unauthorized, headerFields: fields), HTTPBody(#"{"error":"invalid_token"}"#))
        }
        if operationID == Operations.getStatus.id {
            forum.recordTrace(request.headerFields[values: HTTPField.Name("X-Forum-Trace")!])
        }
        var (response, responseBody) = try await next(request, body, metadata)
        if operationID == Operations.listPosts.id, response.status == .ok {
            for link in ForumState.postLinks {
                response.headerFields.append(HTTPField(name: HTTPField.Name("Link")!, value: link))
            }
            response.headerFields[.cacheControl] = ForumState.postsCacheControl
        }
        return (response, responseBody)
    }
}

/// The operations, on ``ForumState``.
private struct Handler: APIProtocol {
    let forum: ForumState

    private static func tokens(_ tokens: ForumState.Tokens) -> Components.Schemas.TokenResponse {
        .init(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresIn: tokens.expiresIn)
    }

    private static func post(_ post: ForumState.Post) -> Components.Schemas.Post {
        .init(userId: post.userId, id: post.id, title: post.title, body: post.body)
    }

    private static let invalidGrant = Components.Responses.Unauthorized(body: .json(.init(error: "invalid_grant")))

    func login(_ input: Operations.login.Input) async throws -> Operations.login.Output {
        guard case .json(let login) = input.body, let tokens = forum.login(username: login.username, password: login.password) else {
            return .unauthorized(Self.invalidGrant)
        }
        return .ok(.init(body: .json(Self.tokens(tokens))))
    }

    func refreshToken(_ input: Operations.refreshToken.Input) async throws -> Operations.refreshToken.Output {
        guard case .json(let refresh) = input.body, let tokens = forum.refresh(refresh.refreshToken) else {
            return .unauthorized(Self.invalidGrant)
        }
        return .ok(.init(body: .json(Self.tokens(tokens))))
    }

    func listPosts(_ input: Operations.listPosts.Input) async throws -> Operations.listPosts.Output {
        if let seconds = forum.takeRateLimit() {
            return .tooManyRequests(.init(headers: .init(Retry_hyphen_After: "\(seconds)"), body: .json(.init(error: "slow_down"))))
        }
        return .ok(.init(body: .json(forum.posts(userId: input.query.userId).map(Self.post))))
    }

    func createPost(_ input: Operations.createPost.Input) async throws -> Operations.createPost.Output {
        guard case .json(let draft) = input.body else { throw CancellationError() }
        return .created(.init(body: .json(Self.post(forum.createPost(title: draft.title, body: draft.body)))))
    }

    func uploadAttachment(_ input: Operations.uploadAttachment.Input) async throws -> Operations.uploadAttachment.Output {
        guard case .multipartForm(let parts) = input.body else { throw CancellationError() }
        var received: [Components.Schemas.ReceivedPart] = []
        for try await part in parts {
            switch part {
            case .caption(let caption):
                let bytes = try await Data(collecting: caption.payload.body, upTo: 1 << 20)
                received.append(.init(name: "caption", bytes: bytes.count))
            case .file(let file):
                let bytes = try await Data(collecting: file.payload.body, upTo: 32 << 20)
                forum.storeAttachment(bytes, name: file.filename ?? "file")
                received.append(.init(name: "file", filename: file.filename, bytes: bytes.count))
            case .undocumented(let raw):
                let bytes = try await Data(collecting: raw.body, upTo: 32 << 20)
                received.append(.init(name: raw.name ?? "", filename: raw.filename, bytes: bytes.count))
            }
        }
        return .created(.init(body: .json(received)))
    }

    func downloadAttachment(_ input: Operations.downloadAttachment.Input) async throws -> Operations.downloadAttachment.Output {
        let name = input.path.name
        if name == "endless" { return .ok(.init(body: .binary(endless()))) }
        guard let data = forum.attachment(name) else { return .notFound(.init()) }
        let chunks = stride(from: 0, to: data.count, by: 64 << 10).map { ArraySlice(data[$0..<min($0 + (64 << 10), data.count)]) }
        return .ok(.init(body: .binary(HTTPBody(chunks.async, length: .known(Int64(data.count)), iterationBehavior: .multiple))))
    }

    /// A body that never ends: a chunk every 20 ms until the server stops reading it (the client
    /// went away and a write failed), which the forum is told of.
    private func endless() -> HTTPBody {
        HTTPBody(EndlessBody(forum: forum), length: .unknown, iterationBehavior: .single)
    }

    func getStatus(_ input: Operations.getStatus.Input) async throws -> Operations.getStatus.Output {
        let failure = forum.takeStatusFailure()
        if failure.fails {
            return .serviceUnavailable(.init(headers: .init(Retry_hyphen_After: failure.retryAfter.map(String.init))))
        }
        return .ok(.init(body: .json(.init(ok: true))))
    }
}

/// A chunk every 20 ms, forever; an iterator released before the end tells the forum that the
/// download was abandoned.
private struct EndlessBody: AsyncSequence, Sendable {
    let forum: ForumState

    func makeAsyncIterator() -> Iterator { Iterator(source: Source(forum: forum)) }

    struct Iterator: AsyncIteratorProtocol {
        let source: Source

        mutating func next() async throws -> ArraySlice<UInt8>? {
            try await source.next()
        }
    }

    final class Source: Sendable {
        let forum: ForumState

        init(forum: ForumState) {
            self.forum = forum
            forum.downloadStarted()
        }

        deinit { forum.downloadAbandoned() }

        func next() async throws -> ArraySlice<UInt8>? {
            try await Task.sleep(for: .milliseconds(20))
            return ArraySlice(repeating: 0x2A, count: 1024)
        }
    }
}

/// An array's elements as an async sequence.
private struct AsyncArray<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]

    func makeAsyncIterator() -> Iterator { Iterator(elements: elements) }

    struct Iterator: AsyncIteratorProtocol {
        var elements: [Element]
        var index = 0

        mutating func next() async -> Element? {
            guard index < elements.count else { return nil }
            defer { index += 1 }
            return elements[index]
        }
    }
}

extension Array where Element: Sendable {
    fileprivate var async: AsyncArray<Element> { AsyncArray(elements: self) }
}
