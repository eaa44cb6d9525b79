import ForumAPI
import ForumServers
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Signals
import Testing
import Transit
import TransitCache
import TransitOpenAPI

/// The generated forum client, through Transit, against both servers on both transports.
@Suite(.timeLimit(.minutes(2)))
struct GeneratedClientScenarioTests {
    static let matrix = Array(zip(ServerKind.allCases, [NetworkKind.asyncHTTPClient, .asyncHTTPClient]))
        + Array(zip(ServerKind.allCases, [NetworkKind.urlSession, .urlSession]))

    @Test("concurrent 401s share one token refresh", arguments: matrix)
    func concurrentUnauthorizedShareOneRefresh(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network)
            server.forum.expireAccessTokens()
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await forum.client.listPosts().ok.body.json.count }
                }
                var counts: [Int] = []
                for try await count in group { counts.append(count) }
                return counts
            }
            #expect(counts == Array(repeating: ForumState.initialPosts.count, count: 4))
            #expect(server.forum.refreshCount == 1)
        }
    }

    @Test("a 429 is waited out in virtual time, then sent again", arguments: matrix)
    func rateLimitIsWaitedOut(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let scheduler = ObservedScheduler()
            let forum = try await SignedInForum(
                server: server, network: network,
                configureClient: { $0.scheduler = scheduler },
                configureTransport: { $0.maxWaitOn429 = .seconds(120) }
            )
            server.forum.rateLimitNextRequests(retryAfter: 42)
            async let posts = forum.client.listPosts().ok.body.json
            await scheduler.advanceOnce(whenScheduled: .seconds(42))
            #expect(try await posts.count == ForumState.initialPosts.count)
            #expect(server.forum.hits("listPosts") == 2)
            #expect(scheduler.now == .seconds(42))
        }
    }

    @Test("without the wait, the 429 is the generated client's response", arguments: matrix)
    func rateLimitIsAResponseWithoutTheWait(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network)
            server.forum.rateLimitNextRequests(retryAfter: 42)
            let output = try await forum.client.listPosts()
            guard case .tooManyRequests(let response) = output else {
                Issue.record("expected a 429, got \(output)")
                return
            }
            #expect(response.headers.Retry_hyphen_After == "42")
        }
    }

    @Test("a 503 is retried within the policy, Retry-After in virtual time", arguments: matrix)
    func unavailableIsRetried(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let scheduler = ObservedScheduler()
            let forum = try await SignedInForum(
                server: server, network: network,
                configureClient: { $0.scheduler = scheduler },
                configureTransport: { $0.retryPolicy = RetryPolicy(maxAttempts: 3, budget: RetryBudget(ratio: 0.5, minRetriesPerSecond: 10)) }
            )
            server.forum.failStatus(2, retryAfter: 7)
            async let status = forum.client.getStatus().ok.body.json
            await scheduler.advanceOnce(whenScheduled: .seconds(7))
            await scheduler.advanceOnce(whenScheduled: .seconds(7))
            #expect(try await status.ok)
            #expect(server.forum.hits("getStatus") == 3)
        }
    }

    @Test("past the policy's attempts, the last 503 is the response", arguments: matrix)
    func unavailablePastThePolicyIsTheResponse(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let scheduler = ObservedScheduler()
            let forum = try await SignedInForum(
                server: server, network: network,
                configureClient: { $0.scheduler = scheduler },
                configureTransport: { $0.retryPolicy = RetryPolicy(maxAttempts: 2) }
            )
            server.forum.failStatus(5, retryAfter: 3)
            async let output = forum.client.getStatus()
            await scheduler.advanceOnce(whenScheduled: .seconds(3))
            guard case .serviceUnavailable = try await output else {
                Issue.record("expected the 503, got \(try await output)")
                return
            }
            #expect(server.forum.hits("getStatus") == 2)
        }
    }

    @Test("an exhausted retry budget sends no retry, and says so", arguments: matrix)
    func exhaustedBudgetSendsNoRetry(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let log = EventLog()
            let forum = try await SignedInForum(
                server: server, network: network,
                configureClient: { $0.monitors = [log] },
                configureTransport: { $0.retryPolicy = RetryPolicy(maxAttempts: 3, budget: RetryBudget(ratio: 0, minRetriesPerSecond: 0)) }
            )
            server.forum.failStatus(1)
            let error = await #expect(throws: ClientError.self) { try await forum.client.getStatus() }
            let description = String(describing: error?.underlyingError)
            #expect(description.contains("retry budget"))
            #expect(server.forum.hits("getStatus") == 1)
            #expect(log.retriesRefusedByBudget == 1)
        }
    }

    @Test("the client's cache serves a repeated GET", arguments: matrix)
    func cacheServesRepeatedGet(server kind: ServerKind, network: NetworkKind) async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try HTTPCache(records: DiskCache(directory: folder))
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network, configureClient: {
                $0.transport = $0.transport.caching(in: cache)
            })
            let first = try await forum.client.listPosts().ok.body.json
            let second = try await forum.client.listPosts().ok.body.json
            #expect(first == second)
            #expect(first.count == ForumState.initialPosts.count)
            #expect(server.forum.hits("listPosts") == 1)
        }
    }

    @Test("a response body past the client's limit fails with ResponseTooLargeError", arguments: matrix)
    func bodyPastTheLimitFails(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network, configureClient: { $0.maxResponseBytes = 64 })
            let error = await #expect(throws: ClientError.self) { try await forum.client.listPosts() }
            #expect(error?.underlyingError is ResponseTooLargeError)
        }
    }

    @Test("JSON in and out: a post is created", arguments: matrix)
    func createPost(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network)
            let post = try await forum.client.createPost(body: .json(.init(title: "Generated", body: "Through Transit"))).created.body.json
            #expect(post.title == "Generated")
            #expect(server.forum.posts(userId: nil).last?.title == "Generated")
        }
    }

    @Test("a multipart upload goes through a file, is sent again after a 401, and the file is removed", arguments: matrix)
    func multipartUploadReplayedAfterRenewal(server kind: ServerKind, network: NetworkKind) async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network, configureTransport: { $0.temporaryDirectory = folder })
            server.forum.expireAccessTokens()
            let file = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let parts = try await forum.client.uploadAttachment(body: .multipartForm([
                .caption(.init(payload: .init(body: HTTPBody("notes")))),
                .file(.init(payload: .init(body: HTTPBody(file)), filename: "notes.bin")),
            ])).created.body.json
            #expect(parts.map(\.name) == ["caption", "file"])
            #expect(parts.last?.bytes == file.count)
            #expect(server.forum.attachment("notes.bin") == file)
            #expect(server.forum.hits("uploadAttachment") == 2)
            #expect(server.forum.refreshCount == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test("a request body past the limit fails before anything is sent, leaving no file", arguments: matrix)
    func requestBodyPastTheLimit(server kind: ServerKind, network: NetworkKind) async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network, configureTransport: {
                $0.temporaryDirectory = folder
                $0.maxRequestBodyBytes = 10_000
            })
            let error = await #expect(throws: ClientError.self) {
                try await forum.client.uploadAttachment(body: .multipartForm([
                    .file(.init(payload: .init(body: HTTPBody(Data(count: 20_000))), filename: "big.bin")),
                ]))
            }
            #expect(error?.underlyingError as? TransitOpenAPIError == .requestBodyTooLarge(limit: 10_000))
            #expect(server.forum.hits("uploadAttachment") == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test("a download streams as it arrives", arguments: matrix)
    func streamedDownload(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network)
            let data = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            server.forum.storeAttachment(data, name: "large.bin")
            let body = try await forum.client.downloadAttachment(path: .init(name: "large.bin")).ok.body.binary
            var received = Data()
            var chunks = 0
            for try await chunk in body {
                received.append(contentsOf: chunk)
                chunks += 1
            }
            #expect(received == data)
            #expect(chunks > 1)
        }
    }

    @Test("cancelling the calling task closes the connection the server answers on", arguments: matrix)
    func cancellationReachesTheServer(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            let forum = try await SignedInForum(server: server, network: network)
            let firstChunk = AsyncStream<Int>.makeStream()
            let download = Task {
                let body = try await forum.client.downloadAttachment(path: .init(name: "endless")).ok.body.binary
                for try await chunk in body {
                    firstChunk.continuation.yield(chunk.count)
                }
            }
            var chunks = firstChunk.stream.makeAsyncIterator()
            let size = await chunks.next()
            #expect((size ?? 0) > 0)
            download.cancel()
            await #expect(throws: (any Error).self) { try await download.value }
            try await expectServerSawTheClientGo(server)
        }
    }

    @Test("cancelling a buffered operation closes its connection", arguments: matrix)
    func cancellationOfABufferedOperation(server kind: ServerKind, network: NetworkKind) async throws {
        try await withServer(kind) { server in
            // Nothing streams: the endless body is being buffered when the task is cancelled.
            let forum = try await SignedInForum(server: server, network: network, configureTransport: { $0.streamedContentTypes = [] })
            let download = Task { try await forum.client.downloadAttachment(path: .init(name: "endless")) }
            try await waitUntilDownloadStarted(server)
            download.cancel()
            await #expect(throws: (any Error).self) { try await download.value }
            try await expectServerSawTheClientGo(server)
        }
    }

    @Test("repeated response fields reach the generated client, in order", arguments: ServerKind.allCases)
    func repeatedResponseFieldsKept(server kind: ServerKind) async throws {
        try await withServer(kind) { server in
            let recorder = ResponseFieldRecorder()
            let forum = try await SignedInForum(server: server, network: .asyncHTTPClient, middlewares: [recorder])
            _ = try await forum.client.listPosts().ok
            #expect(recorder.fields.last?[values: .init("Link")!] == ForumState.postLinks)
        }
    }

    @Test("repeated request fields reach the server, in order", arguments: ServerKind.allCases)
    func repeatedRequestFieldsKept(server kind: ServerKind) async throws {
        try await withServer(kind) { server in
            let name = HTTPField.Name("X-Forum-Trace")!
            let forum = try await SignedInForum(
                server: server, network: .asyncHTTPClient,
                middlewares: [AddingRequestFields(fields: [HTTPField(name: name, value: "a"), HTTPField(name: name, value: "b")])]
            )
            _ = try await forum.client.getStatus().ok
            #expect(server.forum.traces == [["a", "b"]])
        }
    }

    @Test("a transport failure is thrown with Transit's typed error inside ClientError", arguments: NetworkKind.allCases)
    func transportFailure(network: NetworkKind) async throws {
        let server = ForumLoopbackServer()
        try server.start()
        let url = server.baseURL
        server.stop()
        let client = Client(serverURL: url, transport: TransitClientTransport(client: Transit.HTTPClient(transport: network.transport)))
        let error = await #expect(throws: ClientError.self) { try await client.getStatus() }
        #expect(error?.underlyingError is TransportError)
        #expect(error?.operationID == "getStatus")
    }
}

/// Waits until the server has started sending the endless download.
private func waitUntilDownloadStarted(_ server: any ForumServer) async throws {
    #expect(await server.waitUntilEndlessDownloadStarted())
}

/// Expects the server to see the client close the endless download's connection.
private func expectServerSawTheClientGo(_ server: any ForumServer) async throws {
    #expect(await server.waitUntilEndlessDownloadAbandoned())
}
