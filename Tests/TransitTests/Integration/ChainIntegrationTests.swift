import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// The operator chains of the HTTP layer, run through `URLSessionTransport` against a real
/// HTTP/1.1 server on 127.0.0.1. Wall-clock bounds are generous and only guard against hangs;
/// every wait ends on a real condition.
@Suite struct ChainIntegrationTests {
    private struct API: RESTAPI {
        let baseURL: String
        let client: HTTPClient
    }

    private struct Item: Codable, Equatable, Sendable {
        let id: Int
        let name: String
    }

    private static let transport = URLSessionTransport()

    private func api(_ server: LoopbackServer, monitors: [any HTTPEventMonitor] = []) -> API {
        API(baseURL: server.url().absoluteString + "/v1", client: HTTPClient(transport: Self.transport) { $0.monitors = monitors })
    }

    @Test(arguments: ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
    func everyVerbReachesTheServerWithMethodBodyAndHeaders(method: String) async throws {
        try await withLoopbackServer(handler: { request in
            request.method == "HEAD" ? .status(204) : .json(#"{"id":7,"name":"echo"}"#)
        }) { server in
            let api = api(server)
            let body = Item(id: 7, name: "seven")
            let modifier: RequestModifier = { try $0.addingValue("yes", forHTTPHeaderField: "X-Test").receivingJSON() }
            let signal: Signal<HTTPResponse, any Error>
            switch method {
            case "GET": signal = api.get(endpoint: "items/7?expand=true", modifier: modifier)
            case "POST": signal = api.post(endpoint: "items", body: .json(body), modifier: modifier)
            case "PUT": signal = api.put(endpoint: "items/7", body: .json(body), modifier: modifier)
            case "PATCH": signal = api.patch(endpoint: "items/7", body: .json(body), modifier: modifier)
            case "DELETE": signal = api.delete(endpoint: "items/7", modifier: modifier)
            default: signal = api.head(endpoint: "items/7", modifier: modifier)
            }
            let response = try await signal.catchHTTPErrors().firstValue()
            #expect(response.statusCode == (method == "HEAD" ? 204 : 200))
            let received = try #require(server.requests.first)
            #expect(server.requests.count == 1)
            #expect(received.method == method)
            #expect(received.value(forHTTPHeaderField: "X-Test") == "yes")
            #expect(received.value(forHTTPHeaderField: "Accept") == "application/json")
            #expect(received.value(forHTTPHeaderField: "User-Agent") == "Transit")
            if method == "GET" {
                #expect(received.path == "/v1/items/7")
                #expect(received.queryItems.first { $0.name == "expand" }?.value == "true")
            }
            if ["POST", "PUT", "PATCH"].contains(method) {
                #expect(try JSONDecoder().decode(Item.self, from: received.body) == body)
                #expect(received.value(forHTTPHeaderField: "Content-Type") == "application/json")
            }
        }
    }

    @Test func fiveConcurrent401sShareOneRefreshOverRealSockets() async throws {
        try await withLoopbackServer(handler: { request in
            switch (request.method, request.path) {
            case ("POST", "/v1/token"):
                return .json(#"{"accessToken":"new","refreshToken":"r2"}"#)
            case ("GET", "/v1/items"):
                return request.value(forHTTPHeaderField: "Authorization") == "Bearer new"
                    ? .json(#"[{"id":1,"name":"one"}]"#)
                    : .status(401)
            default:
                return .status(404)
            }
        }) { server in
            let api = api(server)
            let tokens = TokenStore(token: AuthToken(accessToken: "old", refreshToken: "r1")) { _ in
                api.post(endpoint: "token").catchHTTPErrors().map(\.data).decode(AuthToken.self, decoder: JSONDecoder())
            }
            let items = api.get(endpoint: "items") { try $0.addingBearerAuthorization(accessToken: tokens.current.accessToken) }
                .catchHTTPErrors()
                .retryWithFreshToken(from: tokens)
                .map(\.data)
                .decode([Item].self, decoder: JSONDecoder())
            let results = try await withThrowingTaskGroup(of: [Item].self) { group in
                for _ in 0..<5 { group.addTask { try await items.firstValue() } }
                return try await group.reduce(into: [[Item]]()) { $0.append($1) }
            }
            #expect(results.count == 5)
            #expect(results.allSatisfy { $0 == [Item(id: 1, name: "one")] })
            let requests = server.requests
            #expect(requests.filter { $0.path == "/v1/token" }.count == 1)
            let retried = requests.filter { $0.path == "/v1/items" && $0.value(forHTTPHeaderField: "Authorization") == "Bearer new" }
            #expect(retried.count == 5)
            #expect(tokens.current.accessToken == "new")
        }
    }

    @Test func a429IsRetriedOnceAfterTheAskedWait() async throws {
        try await withLoopbackServer { server in
            server.enqueue([
                .json(#"{"error":"slow down"}"#, status: 429, headers: ["Retry-After": "0.3"]),
                .json(#"[{"id":2,"name":"two"}]"#),
            ])
            let started = ContinuousClock.now
            let items = try await api(server).get(endpoint: "items")
                .catchHTTPErrors()
                .respondToRateLimiting(maxWait: .seconds(5), scheduler: DispatchQueue.global())
                .map(\.data)
                .decode([Item].self, decoder: JSONDecoder())
                .firstValue()
            #expect(items == [Item(id: 2, name: "two")])
            #expect(server.requests.count == 2)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
        }
    }

    @Test func aRetryAfterBeyondTheCapFailsAtOnceWithoutASecondRequest() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.json("{}", status: 429, headers: ["Retry-After": "120"]))
            let signal = api(server).get(endpoint: "items")
                .catchHTTPErrors()
                .respondToRateLimiting(maxWait: .seconds(5), scheduler: TestScheduler())
            let error = await #expect(throws: HTTPClientError.self) { try await signal.firstValue() }
            guard case .tooManyRequests(let retryAfter, _)? = error else {
                Issue.record("expected .tooManyRequests, got \(String(describing: error))")
                return
            }
            #expect(retryAfter == .seconds(120))
            #expect(server.requests.count == 1)
        }
    }

    /// A `TestScheduler` that opens a gate when something is scheduled on it, so that a test
    /// can wait for an operator to start waiting without polling.
    private struct GatedScheduler: Scheduler {
        let base = TestScheduler()
        let scheduled = IntegrationGate()
        var now: Duration { base.now }
        func schedule(_ action: @escaping @Sendable () -> Void) {
            base.schedule(action)
            scheduled.open()
        }
        func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
            defer { scheduled.open() }
            return base.schedule(after: delay, action)
        }
    }

    @Test func cancellingDuringARetryAfterWaitSendsNoFurtherRequest() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.json("{}", status: 429, headers: ["Retry-After": "3"]))
            let scheduler = GatedScheduler()
            let completed = IntegrationGate()
            let token = api(server).get(endpoint: "items")
                .catchHTTPErrors()
                .respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler)
                .sink(receiveCompletion: { _ in completed.open() }, receiveValue: { _ in completed.open() })
            #expect(await scheduler.scheduled.wait())
            #expect(scheduler.base.pendingCount == 1)
            token.cancel()
            #expect(scheduler.base.pendingCount == 0)
            scheduler.base.advance(by: .seconds(10))
            #expect(server.requests.count == 1)
            #expect(!completed.isOpen)
        }
    }

    @Test func aServerErrorIsRetriedWithBackoffOverRealSockets() async throws {
        try await withLoopbackServer { server in
            server.enqueue([.status(503), .status(502), .json(#"[{"id":3,"name":"three"}]"#)])
            let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(50), jitter: .none)
            let items = try await api(server).get(endpoint: "items")
                .catchHTTPErrors()
                .retry(policy, scheduler: DispatchQueue.global())
                .map(\.data)
                .decode([Item].self, decoder: JSONDecoder())
                .firstValue()
            #expect(items == [Item(id: 3, name: "three")])
            #expect(server.requests.count == 3)
        }
    }
}
