import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

@Suite struct HTTPClientTests {
    private struct API: RESTAPI {
        let baseURL = "https://api.example.test/v1"
        let client: HTTPClient
    }

    private final class Monitor: HTTPEventMonitor {
        let log = Locked<[String]>([])
        func receive(_ event: HTTPEvent) {
            switch event.kind {
            case .requestStarted: log.withLock { $0.append("send \(event.request?.httpMethod ?? "")") }
            case .responseReceived(let response): log.withLock { $0.append("receive \(response.statusCode)") }
            case .requestFailed: log.withLock { $0.append("fail") }
            default: break
            }
        }
    }

    private func outcome<T: Sendable>(of signal: Signal<T, any Error>) -> Result<T, any Error>? {
        let result = Locked<Result<T, any Error>?>(nil)
        let token = signal.sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion { result.withLock { $0 = .failure(error) } }
            },
            receiveValue: { value in result.withLock { $0 = .success(value) } }
        )
        _ = token
        return result.withLock { $0 }
    }

    @Test func transportErrorsCarryTheRequestTheyBelongTo() throws {
        let transport = StubTransport()
        transport.stub(.put, path: "/v1/items/1").thenRespond(.failure(URLError(.timedOut)))
        let api = API(client: HTTPClient(transport: transport))
        let result = outcome(of: api.put(endpoint: "items/1"))
        let error = try #require(result.flatMap { if case .failure(let e) = $0 { e as? TransportError } else { nil } })
        #expect(error.code == .timedOut)
        #expect(error.method == .put)
        #expect(error.request.url?.path == "/v1/items/1")
        #expect(error.request.value(forHTTPHeaderField: "User-Agent") == "Transit", "the request as sent, default headers included")
    }

    @Test func aTimedOutGetIsRetriedWithoutBeingToldTheMethod() {
        let scheduler = TestScheduler()
        let transport = StubTransport()
        transport.stub(.get, path: "/v1/posts")
            .thenRespond(.failure(URLError(.timedOut)))
            .thenRespond(.text("ok"))
        let api = API(client: HTTPClient(transport: transport))
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none)
        let result = Locked<String?>(nil)
        let token = api.get(endpoint: "posts").catchHTTPErrors().retry(policy, scheduler: scheduler)
            .sink(receiveCompletion: { _ in }, receiveValue: { response in result.withLock { $0 = response.text } })
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 2)
        #expect(result.withLock { $0 } == "ok")
        token.cancel()
    }

    @Test func aTimedOutPostIsNotRetriedByDefault() {
        let scheduler = TestScheduler()
        let transport = StubTransport()
        transport.stub(.post, path: "/v1/posts")
            .thenRespond(.failure(URLError(.timedOut)))
            .thenRespond(.text("ok"))
        let api = API(client: HTTPClient(transport: transport))
        let failed = Locked(false)
        let token = api.post(endpoint: "posts").catchHTTPErrors().retry(RetryPolicy(maxAttempts: 3), scheduler: scheduler)
            .sink(receiveCompletion: { if case .failure = $0 { failed.withLock { $0 = true } } }, receiveValue: { _ in })
        scheduler.run()
        #expect(transport.requests.count == 1)
        #expect(failed.withLock { $0 })
        token.cancel()
    }

    @Test func monitorsSeeEveryAttempt() {
        let transport = StubTransport()
        transport.stub(.get, path: "/v1/posts").thenRespond(.status(503)).thenRespond(.text("ok"))
        transport.stub(.get, path: "/v1/down").thenRespond(.failure(URLError(.cannotConnectToHost)))
        let monitor = Monitor()
        let api = API(client: HTTPClient(transport: transport) { $0.monitors = [monitor] })
        _ = outcome(of: api.get(endpoint: "posts").catchHTTPErrors().retry(1))
        _ = outcome(of: api.get(endpoint: "down"))
        #expect(monitor.log.withLock { $0 } == ["send GET", "receive 503", "send GET", "receive 200", "send GET", "fail"])
    }
}
