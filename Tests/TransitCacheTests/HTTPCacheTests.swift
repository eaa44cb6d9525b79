import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitCache
import TransitTesting

@Suite("HTTP caching: storage and freshness")
struct HTTPCacheFreshnessTests {
    @Test("a response with max-age is served from the cache until it is stale, with an Age header")
    func maxAge() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/posts").thenRespond(.text("posts", headers: ["Cache-Control": "max-age=60", "Date": fixture.now]))
        let first = try await fixture.send("/posts")
        #expect(first.text == "posts")
        #expect(fixture.events == [.miss(fixture.url("/posts")), .stored(fixture.url("/posts"))])
        fixture.scheduler.advance(by: .seconds(59))
        let second = try await fixture.send("/posts")
        #expect(second.text == "posts")
        #expect(second.statusCode == 200)
        #expect(second.value(forHTTPHeaderField: "Age") == "59")
        #expect(second.value(forHTTPHeaderField: "Cache-Control") == "max-age=60")
        #expect(fixture.networkRequests == 1)
        #expect(fixture.events.last == .hit(fixture.url("/posts")))
        fixture.scheduler.advance(by: .seconds(1))
        _ = try await fixture.send("/posts")
        #expect(fixture.networkRequests == 2)
    }

    @Test("an Age from upstream counts against max-age")
    func upstreamAge() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/a").thenRespond(.text("a", headers: ["Cache-Control": "max-age=60", "Age": "50"]))
        _ = try await fixture.send("/a")
        fixture.scheduler.advance(by: .seconds(9))
        #expect(try await fixture.send("/a").value(forHTTPHeaderField: "Age") == "59")
        #expect(fixture.networkRequests == 1)
        fixture.scheduler.advance(by: .seconds(1))
        _ = try await fixture.send("/a")
        #expect(fixture.networkRequests == 2)
    }

    @Test("Expires minus Date is the lifetime; an invalid Expires means already expired; max-age wins over Expires")
    func expires() async throws {
        let fixture = try HTTPCacheFixture()
        let expiry = httpDate(HTTPCacheFixture.origin.addingTimeInterval(120))
        fixture.stub.stub(.get, path: "/expires").thenRespond(.text("e", headers: ["Date": fixture.now, "Expires": expiry]))
        fixture.stub.stub(.get, path: "/invalid").thenRespond(.text("i", headers: ["Date": fixture.now, "Expires": "0"]))
        fixture.stub.stub(.get, path: "/both").thenRespond(.text("b", headers: ["Date": fixture.now, "Expires": expiry, "Cache-Control": "max-age=10"]))
        for path in ["/expires", "/invalid", "/both"] { _ = try await fixture.send(path) }
        #expect(fixture.networkRequests == 3)
        fixture.scheduler.advance(by: .seconds(9))
        for path in ["/expires", "/invalid", "/both"] { _ = try await fixture.send(path) }
        #expect(fixture.stub.requests.dropFirst(3).map(\.url?.path) == ["/invalid"])
        fixture.scheduler.advance(by: .seconds(110))
        _ = try await fixture.send("/expires")
        _ = try await fixture.send("/both")
        #expect(fixture.stub.requests.dropFirst(4).map(\.url?.path) == ["/both"])
        fixture.scheduler.advance(by: .seconds(1))
        _ = try await fixture.send("/expires")
        #expect(fixture.stub.requests.last?.url?.path == "/expires")
    }

    @Test("heuristic freshness: 10% of the time since Last-Modified, only for statuses that allow it")
    func heuristic() async throws {
        let fixture = try HTTPCacheFixture()
        let modified = httpDate(HTTPCacheFixture.origin.addingTimeInterval(-5 * 86_400))
        fixture.stub.stub(.get, path: "/doc").thenRespond(.text("doc", headers: ["Date": fixture.now, "Last-Modified": modified]))
        fixture.stub.stub(.get, path: "/created").thenRespond(.text("new", status: 201, headers: ["Date": fixture.now, "Last-Modified": modified]))
        fixture.stub.stub(.get, path: "/plain").thenRespond(.text("plain", headers: ["Date": fixture.now]))
        for path in ["/doc", "/created", "/plain"] { _ = try await fixture.send(path) }
        #expect(try await fixture.records.perform { try $0.containsRecord(forKey: HTTPCache.key(for: fixture.url("/doc"))) })
        #expect(try await !fixture.records.perform { try $0.containsRecord(forKey: HTTPCache.key(for: fixture.url("/created"))) })
        fixture.scheduler.advance(by: .seconds(12 * 3600 - 1))
        for path in ["/doc", "/created", "/plain"] { _ = try await fixture.send(path) }
        // /doc is fresh for 12 hours; 201 is not stored; /plain has no lifetime.
        #expect(fixture.stub.requests.dropFirst(3).map(\.url?.path) == ["/created", "/plain"])
        fixture.scheduler.advance(by: .seconds(1))
        _ = try await fixture.send("/doc")
        #expect(fixture.stub.requests.last?.url?.path == "/doc")
    }

    @Test("the heuristic is capped by the configured maximum")
    func heuristicCap() async throws {
        let fixture = try HTTPCacheFixture(maximumHeuristicLifetime: .seconds(600))
        let modified = httpDate(HTTPCacheFixture.origin.addingTimeInterval(-365 * 86_400))
        fixture.stub.stub(.get, path: "/old").thenRespond(.text("old", headers: ["Date": fixture.now, "Last-Modified": modified]))
        _ = try await fixture.send("/old")
        fixture.scheduler.advance(by: .seconds(599))
        _ = try await fixture.send("/old")
        #expect(fixture.networkRequests == 1)
        fixture.scheduler.advance(by: .seconds(1))
        _ = try await fixture.send("/old")
        #expect(fixture.networkRequests == 2)
    }

    @Test("no-store in the response or the request: nothing is stored; a stored response is not used for a no-store request")
    func noStore() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/secret").thenRespond(.text("s", headers: ["Cache-Control": "no-store, max-age=600"]))
        fixture.stub.stub(.get, path: "/page").thenRespond(.text("p", headers: ["Cache-Control": "max-age=600"]))
        _ = try await fixture.send("/secret")
        _ = try await fixture.send("/secret")
        #expect(fixture.networkRequests == 2)
        _ = try await fixture.send("/page", headers: ["Cache-Control": "no-store"])
        #expect(try await !fixture.records.perform { try $0.containsRecord(forKey: HTTPCache.key(for: fixture.url("/page"))) })
        _ = try await fixture.send("/page")
        _ = try await fixture.send("/page", headers: ["Cache-Control": "no-store"])
        #expect(fixture.networkRequests == 5)
        _ = try await fixture.send("/page")
        #expect(fixture.networkRequests == 5)
        #expect(fixture.cache.records.statistics.count == 1)
    }

    @Test("only GET is stored; HEAD is answered from a fresh GET; unsafe methods pass through and invalidate")
    func methods() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/item").thenRespond(.text("item v1", headers: ["Cache-Control": "max-age=600", "X-Version": "1"]))
        fixture.stub.stub(.head, path: "/other").thenRespond(.status(200, headers: ["Cache-Control": "max-age=600"]))
        fixture.stub.stub(.post, path: "/item").thenRespond(.status(204))
        fixture.stub.stub(.post, path: "/failing").thenRespond(.status(500))
        _ = try await fixture.send("/item")
        let head = try await fixture.parts("/item", method: "HEAD")
        #expect(head.count == 1)
        if case .head(let response) = head.first { #expect(response.value(forHTTPHeaderField: "X-Version") == "1") }
        #expect(fixture.networkRequests == 1)
        _ = try await fixture.send("/other", method: "HEAD")
        _ = try await fixture.send("/other", method: "HEAD")
        #expect(fixture.networkRequests == 3)
        _ = try await fixture.send("/failing", method: "POST")
        _ = try await fixture.send("/item")
        #expect(fixture.networkRequests == 4)
        _ = try await fixture.send("/item", method: "POST")
        #expect(fixture.events.last == .invalidated(fixture.url("/item")))
        _ = try await fixture.send("/item")
        #expect(fixture.networkRequests == 6)
        #expect(fixture.stub.requests.map { $0.httpMethod ?? "GET" } == ["GET", "HEAD", "HEAD", "POST", "POST", "GET"])
    }

    @Test("an unsafe request's Location and Content-Location on the same origin are invalidated too")
    func invalidatesLocations() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get).thenRespond(.text("x", headers: ["Cache-Control": "max-age=600"]))
        fixture.stub.stub(.put, path: "/items/1").thenRespond(.status(200, headers: ["Content-Location": "/items/1/view", "Location": "https://other.example.com/items/1"]))
        _ = try await fixture.send("/items/1")
        _ = try await fixture.send("/items/1/view")
        try await fixture.records.perform { try $0.store(Data(), forKey: HTTPCache.key(for: URL(string: "https://other.example.com/items/1")!)) }
        _ = try await fixture.send("/items/1", method: "PUT")
        #expect(Set(fixture.events.suffix(2)) == [.invalidated(fixture.url("/items/1")), .invalidated(fixture.url("/items/1/view"))])
        #expect(try await fixture.records.perform { try $0.containsRecord(forKey: HTTPCache.key(for: URL(string: "https://other.example.com/items/1")!)) })
    }

    @Test("requests with their own validators or a Range pass through untouched")
    func bypass() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/file").thenRespond(.text("file", headers: ["Cache-Control": "max-age=600", "ETag": "\"1\""]))
        _ = try await fixture.send("/file")
        _ = try await fixture.send("/file", headers: ["If-None-Match": "\"0\""])
        _ = try await fixture.send("/file", headers: ["Range": "bytes=0-1"])
        #expect(fixture.networkRequests == 3)
        #expect(fixture.stub.requests[1].value(forHTTPHeaderField: "If-None-Match") == "\"0\"")
    }

    @Test("a stored response with Vary is used only for requests with the same values of those headers")
    func vary() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/greeting").thenRespond(.text("hello", headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"]))
        fixture.stub.stub(.get, path: "/star").thenRespond(.text("*", headers: ["Cache-Control": "max-age=600", "Vary": "*"]))
        _ = try await fixture.send("/greeting", headers: ["Accept-Language": "en"])
        _ = try await fixture.send("/greeting", headers: ["Accept-Language": "en"])
        #expect(fixture.networkRequests == 1)
        _ = try await fixture.send("/greeting", headers: ["Accept-Language": "fr"])
        _ = try await fixture.send("/greeting")
        #expect(fixture.networkRequests == 3)
        _ = try await fixture.send("/greeting")
        #expect(fixture.networkRequests == 3)
        _ = try await fixture.send("/star")
        _ = try await fixture.send("/star")
        #expect(fixture.networkRequests == 5)
    }

    @Test("responses to requests with Authorization are kept (a private cache), and removeAll wipes them on sign-out")
    func authorizationAndSignOut() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/me").thenRespond(.text("me", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await fixture.send("/me", headers: ["Authorization": "Bearer token"])
        _ = try await fixture.send("/me", headers: ["Authorization": "Bearer token"])
        #expect(fixture.networkRequests == 1)
        try fixture.cache.removeAll()
        #expect(try fixture.folder.recordFiles().isEmpty)
        _ = try await fixture.send("/me", headers: ["Authorization": "Bearer token"])
        #expect(fixture.networkRequests == 2)
    }

    @Test("request directives: no-cache and max-age revalidate, min-fresh asks for more, max-stale accepts stale, only-if-cached never goes out")
    func requestDirectives() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/r").thenRespond(.text("r", headers: ["Cache-Control": "max-age=100"]))
        _ = try await fixture.send("/r")
        fixture.scheduler.advance(by: .seconds(50))
        _ = try await fixture.send("/r", headers: ["Cache-Control": "no-cache"])
        _ = try await fixture.send("/r", headers: ["Pragma": "no-cache"])
        #expect(fixture.networkRequests == 3)
        fixture.scheduler.advance(by: .seconds(50))
        _ = try await fixture.send("/r", headers: ["Cache-Control": "max-age=40"])
        #expect(fixture.networkRequests == 4)
        _ = try await fixture.send("/r", headers: ["Cache-Control": "max-age=60"])
        _ = try await fixture.send("/r", headers: ["Cache-Control": "min-fresh=40"])
        #expect(fixture.networkRequests == 4)
        _ = try await fixture.send("/r", headers: ["Cache-Control": "min-fresh=101"])
        #expect(fixture.networkRequests == 5)
        fixture.scheduler.advance(by: .seconds(130))
        #expect(try await fixture.send("/r", headers: ["Cache-Control": "max-stale=60"]).text == "r")
        #expect(try await fixture.send("/r", headers: ["Cache-Control": "max-stale"]).text == "r")
        #expect(fixture.networkRequests == 5)
        #expect(try await fixture.send("/r", headers: ["Cache-Control": "only-if-cached"]).statusCode == 504)
        #expect(try await fixture.send("/missing", headers: ["Cache-Control": "only-if-cached"]).statusCode == 504)
        #expect(fixture.networkRequests == 5)
    }
}

@Suite("HTTP caching: validation, errors, offline, streaming")
struct HTTPCacheValidationTests {
    @Test("a stale response with an ETag is revalidated; a 304 serves the stored body with the headers updated, and refreshes it")
    func etagRevalidation() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/feed")
            .thenRespond(.text("the feed", headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "X-Served": "first", "Content-Type": "text/plain"]))
            .thenRespond(.status(304, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "X-Served": "revalidated"]))
        _ = try await fixture.send("/feed")
        fixture.scheduler.advance(by: .seconds(10))
        let revalidated = try await fixture.send("/feed")
        #expect(fixture.stub.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        #expect(revalidated.statusCode == 200)
        #expect(revalidated.text == "the feed")
        #expect(revalidated.value(forHTTPHeaderField: "X-Served") == "revalidated")
        #expect(revalidated.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(fixture.events.suffix(2) == [.stored(fixture.url("/feed")), .revalidated(fixture.url("/feed"))])
        // The 304's max-age=60 now applies: served from the cache for a minute.
        fixture.scheduler.advance(by: .seconds(59))
        let hit = try await fixture.send("/feed")
        #expect(hit.text == "the feed")
        #expect(hit.value(forHTTPHeaderField: "X-Served") == "revalidated")
        #expect(fixture.networkRequests == 2)
    }

    @Test("a large body (served from the file, not memory) survives revalidations intact")
    func largeBodyRevalidation() async throws {
        let fixture = try HTTPCacheFixture()
        let chunks = (0..<5).map { payload($0, count: 1 << 20) }
        fixture.stub.stub(.get, path: "/large")
            .thenRespond(.chunks(chunks, headers: ["Cache-Control": "no-cache", "ETag": "\"big\""]))
            .thenRespond(.status(304, headers: ["ETag": "\"big\"", "X-Round": "2"]))
        _ = try await fixture.send("/large")
        for _ in 0..<2 {
            let response = try await fixture.send("/large")
            #expect(response.data == chunks.reduce(Data(), +))
            #expect(response.value(forHTTPHeaderField: "X-Round") == "2")
        }
        #expect(fixture.networkRequests == 3)
        #expect(fixture.events.filter { $0 == .revalidated(fixture.url("/large")) }.count == 2)
        #expect(try fixture.folder.temporaryFiles().isEmpty)
    }

    @Test("Last-Modified is revalidated with If-Modified-Since; no-cache revalidates every time")
    func lastModifiedNoCache() async throws {
        let fixture = try HTTPCacheFixture()
        let modified = httpDate(HTTPCacheFixture.origin.addingTimeInterval(-3600))
        fixture.stub.stub(.get, path: "/doc")
            .thenRespond(.text("doc", headers: ["Cache-Control": "no-cache", "Last-Modified": modified]))
            .thenRespond(.status(304))
        _ = try await fixture.send("/doc")
        #expect(try await fixture.send("/doc").text == "doc")
        #expect(try await fixture.send("/doc").text == "doc")
        #expect(fixture.networkRequests == 3)
        #expect(fixture.stub.requests.dropFirst().allSatisfy { $0.value(forHTTPHeaderField: "If-Modified-Since") == modified })
    }

    @Test("a new 200 during revalidation replaces the stored response")
    func revalidationReplaces() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/v")
            .thenRespond(.text("v1", headers: ["Cache-Control": "max-age=10", "ETag": "\"1\""]))
            .thenRespond(.text("v2", headers: ["Cache-Control": "max-age=10", "ETag": "\"2\""]))
        _ = try await fixture.send("/v")
        fixture.scheduler.advance(by: .seconds(11))
        #expect(try await fixture.send("/v").text == "v2")
        #expect(try await fixture.send("/v").text == "v2")
        #expect(fixture.networkRequests == 2)
    }

    @Test("stale-if-error: a network failure or a 5xx serves the stale response within the window, not after it")
    func staleIfError() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/news")
            .thenRespond(.text("news", headers: ["Cache-Control": "max-age=10, stale-if-error=300"]))
            .thenRespond(.failure(URLError(.cannotConnectToHost)))
            .thenRespond(.status(503))
        _ = try await fixture.send("/news")
        fixture.scheduler.advance(by: .seconds(100))
        let stale = try await fixture.send("/news")
        #expect(stale.text == "news")
        #expect(stale.value(forHTTPHeaderField: "Age") == "100")
        #expect(fixture.events.last == .servedStaleOnError(fixture.url("/news")))
        #expect(try await fixture.send("/news").text == "news")
        fixture.scheduler.advance(by: .seconds(300))
        #expect(try await fixture.send("/news").statusCode == 503)
        #expect(fixture.networkRequests == 4)
    }

    @Test("without stale-if-error a failure is the caller's; a request's own stale-if-error is honoured")
    func noStaleIfError() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/x")
            .thenRespond(.text("x", headers: ["Cache-Control": "max-age=10"]))
            .thenRespond(.failure(URLError(.timedOut)))
        _ = try await fixture.send("/x")
        fixture.scheduler.advance(by: .seconds(20))
        await #expect(throws: URLError(.timedOut)) { try await fixture.send("/x") }
        #expect(try await fixture.send("/x", headers: ["Cache-Control": "stale-if-error=60"]).text == "x")
    }

    @Test("offline mode serves what is stored, however stale, and fails clearly for the rest; nothing goes out")
    func offline() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/stale").thenRespond(.text("stale", headers: ["Cache-Control": "max-age=1"]))
        fixture.stub.stub(.get, path: "/strict").thenRespond(.text("strict", headers: ["Cache-Control": "max-age=1, must-revalidate"]))
        _ = try await fixture.send("/stale")
        _ = try await fixture.send("/strict")
        fixture.scheduler.advance(by: .seconds(3600))
        fixture.cache.isOffline = true
        #expect(try await fixture.send("/stale").text == "stale")
        #expect(fixture.events.last == .servedOffline(fixture.url("/stale")))
        for path in ["/strict", "/never-stored"] {
            await #expect {
                try await fixture.send(path)
            } throws: { error in
                (error as? URLError)?.code == .notConnectedToInternet
                    && (error as? URLError)?.localizedDescription.contains("Offline, and the cache has no usable response") == true
            }
        }
        #expect(fixture.events.last == .offlineMiss(fixture.url("/never-stored")))
        #expect(fixture.networkRequests == 2)
        fixture.cache.isOffline = false
        _ = try await fixture.send("/stale")
        #expect(fixture.networkRequests == 3)
    }

    @Test("the body is stored as its chunks stream past, and a stored body is served in chunks")
    func streamingBody() async throws {
        let fixture = try HTTPCacheFixture()
        let chunks = (0..<5).map { payload($0, count: 100_000) }
        fixture.stub.stub(.get, path: "/big").thenRespond(.chunks(chunks, headers: ["Cache-Control": "max-age=600"]))
        let first = try await fixture.parts("/big")
        #expect(first.compactMap(\.bodyChunk) == chunks)
        let served = try await fixture.parts("/big")
        let body = served.compactMap(\.bodyChunk)
        #expect(body.reduce(Data(), +) == chunks.reduce(Data(), +))
        #expect(body.count == 2)
        #expect(body.allSatisfy { $0.count <= CacheExchange.servingChunkSize })
        #expect(fixture.networkRequests == 1)
    }

    @Test("a body that fails mid-stream or is cancelled is not stored, and leaves no temporary file")
    func interruptedBody() async throws {
        let fixture = try HTTPCacheFixture()
        let stub = StubTransport(scheduler: fixture.scheduler)
        let transport = stub.caching(in: fixture.cache)
        stub.stub(.get, path: "/broken").thenRespond(.chunks([payload(1), payload(2)], headers: ["Cache-Control": "max-age=600"], thenFail: URLError(.networkConnectionLost)))
        stub.stub(.get, path: "/slow").thenRespond(.chunks([payload(1), payload(2)], headers: ["Cache-Control": "max-age=600"], every: .seconds(1)))
        await #expect(throws: URLError(.networkConnectionLost)) {
            try await transport.send(fixture.request("/broken")).firstValue()
        }
        let received = Locked(0)
        let token = transport.exchange(TransportRequest(fixture.request("/slow"))).sink(
            receiveCompletion: { _ in }, receiveValue: { _ in received.withLock { $0 += 1 } }
        )
        fixture.records.queue.sync(flags: .barrier) {}
        #expect(received.withLock { $0 } == 1)
        fixture.scheduler.advance(by: .seconds(1))
        #expect(received.withLock { $0 } == 2)
        #expect(try fixture.folder.temporaryFiles().count == 1)
        token.cancel()
        #expect(try fixture.folder.temporaryFiles().isEmpty)
        #expect(try fixture.folder.recordFiles().isEmpty)
    }

    @Test("a response that cannot be stored is still delivered, and the failure reported")
    func storeFailure() async throws {
        let fixture = try HTTPCacheFixture(maximumRecordSize: 2000)
        fixture.stub.stub(.get, path: "/large").thenRespond(.text(String(repeating: "x", count: 5000), headers: ["Cache-Control": "max-age=600"]))
        fixture.stub.stub(.get, path: "/chunked").thenRespond(.chunks([payload(1, count: 1500), payload(2, count: 1500)], headers: ["Cache-Control": "max-age=600"]))
        #expect(try await fixture.send("/large").data.count == 5000)
        #expect(try await fixture.send("/chunked").data == payload(1, count: 1500) + payload(2, count: 1500))
        let failures = fixture.events.filter { if case .storeFailed(_, .recordTooLarge) = $0 { return true } else { return false } }
        #expect(failures.count == 2)
        #expect(try fixture.folder.recordFiles().isEmpty)
        #expect(try fixture.folder.temporaryFiles().isEmpty)
    }

    @Test("a damaged stored response is never served: the request goes to the network")
    func damagedStoredResponse() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/d").thenRespond(.text("intact", headers: ["Cache-Control": "max-age=600"]))
        _ = try await fixture.send("/d")
        let path = fixture.folder.recordPath(HTTPCache.key(for: fixture.url("/d")))
        var bytes = try fileBytes(path)
        bytes[bytes.count - 2] ^= 0x20
        try overwrite(path, with: bytes)
        #expect(try await fixture.send("/d").text == "intact")
        #expect(fixture.networkRequests == 2)
    }

    @Test("through HTTPClient: the client's headers reach the cache and a cached response comes back buffered")
    func throughClient() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/posts").thenRespond(.json(#"[{"id":1}]"#, headers: ["Cache-Control": "max-age=60"]))
        let client = HTTPClient(transport: fixture.transport) { $0.defaultHeaders = ["Accept": "application/json"] }
        let first = try await client.send(fixture.request("/posts")).firstValue()
        let second = try await client.send(fixture.request("/posts")).firstValue()
        #expect(first.data == second.data)
        #expect(second.value(forHTTPHeaderField: "Age") == "0")
        #expect(fixture.networkRequests == 1)
        #expect(fixture.stub.requests.first?.value(forHTTPHeaderField: "Accept") == "application/json")
    }
}

@Suite("HTTP caching: lifetimes")
struct HTTPCacheLifetimeTests {
    @Test("a finished exchange — stored, served, failed to store — releases the cache and everything it made")
    func releases() async throws {
        let folder = try TemporaryFolder()
        weak var weakRecords: DiskCache?
        weak var weakCache: HTTPCache?
        let queue: DispatchQueue
        do {
            let records = try DiskCache(directory: folder.url, configuration: .init(maximumRecordSize: 3000))
            let cache = HTTPCache(records: records)
            queue = records.queue
            weakRecords = records
            weakCache = cache
            let stub = StubTransport()
            stub.stub(.get, path: "/small").thenRespond(.text("small", headers: ["Cache-Control": "max-age=60"]))
            stub.stub(.get, path: "/large").thenRespond(.status(200, headers: ["Cache-Control": "max-age=60"], body: Data(count: 5000)))
            let transport = stub.caching(in: cache)
            for path in ["/small", "/small", "/large"] {
                _ = try await transport.send(URLRequest(url: URL(string: "https://example.com\(path)")!)).firstValue()
            }
        }
        // The last exchange may still be returning from its block on the cache's queue.
        queue.sync(flags: .barrier) {}
        #expect(weakCache == nil)
        #expect(weakRecords == nil)
    }
}
