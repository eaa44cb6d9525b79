import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// `URLSessionTransport` over real sockets, against the loopback server. Wall-clock tests with
/// generous bounds; every wait is on a real condition.
@Suite("URLSessionTransport")
struct URLSessionTransportTests {
    /// A fresh transport per test (its own session), so tests do not share connections.
    private func makeTransport() -> URLSessionTransport {
        let configuration = URLSessionConfiguration.loopbackTests()
        return URLSessionTransport(configuration: configuration)
    }

    /// A client over `transport` whose monitor is `log`, with no default header.
    private func monitoredClient(_ transport: URLSessionTransport, _ log: AttemptLog) -> HTTPClient {
        HTTPClient(transport: transport) {
            $0.userAgent = nil
            $0.monitors = [log]
        }
    }

    @Test(arguments: [200, 201, 204, 304, 404, 429, 500, 503])
    func deliversEveryStatusAsAResponseWithItsHeaders(status: Int) async throws {
        try await withLoopbackServer { server in
            server.enqueue(.status(status, headers: ["X-Request-Id": "abc-123", "Retry-After": "7"], body: status == 204 || status == 304 ? Data() : Data("body \(status)".utf8)))
            let recorder = try await sendAndWait(makeTransport(), URLRequest(url: server.url("/status")))
            #expect(recorder.isFinished)
            let response = try #require(recorder.responses.first)
            #expect(recorder.responses.count == 1)
            #expect(response.statusCode == status)
            #expect(response.value(forHTTPHeaderField: "x-request-id") == "abc-123")
            #expect(response.value(forHTTPHeaderField: "Retry-After") == "7")
            #expect(response.text == (status == 204 || status == 304 ? "" : "body \(status)"))
            #expect(response.request.url == server.url("/status"))
        }
    }

    @Test func sendsTheMethodBodyAndHeadersItIsGiven() async throws {
        try await withLoopbackServer(handler: { _ in .status(201) }) { server in
            let transport = makeTransport()
            for method in ["POST", "PUT", "PATCH", "DELETE"] {
                var request = URLRequest(url: server.url("/posts/1?draft=true"))
                request.httpMethod = method
                request.httpBody = Data(#"{"title":"\#(method)"}"#.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.setValue("Bearer t0k3n", forHTTPHeaderField: "Authorization")
                let recorder = try await sendAndWait(transport, request)
                #expect(recorder.responses.first?.statusCode == 201)
            }
            let requests = server.requests
            #expect(requests.map(\.method) == ["POST", "PUT", "PATCH", "DELETE"])
            for request in requests {
                #expect(request.path == "/posts/1")
                #expect(request.queryItems.first { $0.name == "draft" }?.value == "true")
                #expect(String(data: request.body, encoding: .utf8) == #"{"title":"\#(request.method)"}"#)
                #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
                #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t0k3n")
                #expect(request.value(forHTTPHeaderField: "Content-Length") == "\(request.body.count)")
            }
        }
    }

    @Test func sendsLargeBodiesWhole() async throws {
        try await withLoopbackServer(handler: { .text("\($0.body.count)") }) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            let body = patternedData(count: 300_000) { UInt8(truncatingIfNeeded: $0 &* 31) }
            request.httpBody = body
            let recorder = try await sendAndWait(makeTransport(), request)
            #expect(recorder.responses.first?.text == "300000")
            #expect(server.requests.first?.body == body)
        }
    }

    @Test func assemblesAChunkedBodyAndCountsItsPieces() async throws {
        let log = AttemptLog()
        try await withLoopbackServer { server in
            let chunks = (0..<4).map { Data(String(repeating: "\($0)", count: 1000).utf8) }
            server.enqueue(.chunked(chunks, interval: .milliseconds(100), headers: ["Content-Type": "text/plain"]))
            server.enqueue(.chunked(chunks, interval: .milliseconds(100), headers: ["Content-Type": "text/plain"]))
            let transport = makeTransport()
            let recorder = try await sendAndWait(transport, URLRequest(url: server.url("/stream")))
            let response = try #require(recorder.responses.first)
            #expect(response.data == chunks.reduce(Data(), +))
            #expect(recorder.isFinished)
            // The server paused 100 ms between chunks, so they arrived as separate pieces.
            let parts = try await transport.exchange(TransportRequest(URLRequest(url: server.url("/stream")))).collect().firstValue()
            let pieces = parts.compactMap { part -> Int? in if case .body(let chunk) = part { chunk.count } else { nil } }
            #expect(pieces.count >= 2)
            #expect(pieces.reduce(0, +) == 4000)
            server.enqueue(.chunked(chunks, interval: .milliseconds(100), headers: ["Content-Type": "text/plain"]))
            _ = try await sendAndWait(monitoredClient(transport, log), URLRequest(url: server.url("/stream")))
            let attempt = try #require(log.attempts.first)
            #expect(log.attempts.count == 1)
            #expect(attempt.receivedBodyBytes == 4000)
            #expect(attempt.head?.statusCode == 200)
            guard case .completed = attempt.outcome else {
                Issue.record("expected a completed transfer, got \(attempt.outcome)")
                return
            }
        }
    }

    @Test func reportsSentBytesAndFailures() async throws {
        let log = AttemptLog()
        try await withLoopbackServer { server in
            server.enqueue(.status(200))
            var request = URLRequest(url: server.url("/count"))
            request.httpMethod = "POST"
            request.httpBody = Data(count: 1234)
            _ = try await sendAndWait(monitoredClient(makeTransport(), log), request)
            #expect(log.attempts.first?.sentBodyBytes == 1234)
            #expect(server.requests.first?.body.count == 1234)
        }
        let refused = try await sendAndWait(
            monitoredClient(makeTransport(), log), URLRequest(url: URL(string: "http://127.0.0.1:\(try closedLoopbackPort())/")!)
        )
        #expect(refused.error != nil)
        #expect(log.attempts.count == 2)
        guard case .failed(let error)? = log.attempts.last?.outcome else {
            Issue.record("expected a failed transfer")
            return
        }
        #expect((error as? TransportError)?.urlError != nil)
    }

    @Test func aDroppedConnectionFailsWithAURLError() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.dropConnection)
            let recorder = try await sendAndWait(makeTransport(), URLRequest(url: server.url("/drop")))
            #expect(recorder.responses.isEmpty)
            let error = try #require(recorder.urlError)
            // Linux's libcurl says "Empty reply from server" (.badServerResponse); the transport
            // reports it as Darwin does.
            #expect(error.code == .networkConnectionLost, "\(error)")
        }
    }

    @Test func aConnectionClosedMidBodyFailsWithAURLError() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text(String(repeating: "x", count: 10_000)).closingMidBody(afterBytes: 100))
            server.enqueue(.chunked([Data("abc".utf8), Data("def".utf8)]).closingMidBody(afterBytes: 3))
            let transport = makeTransport()
            for path in ["/fixed", "/chunked"] {
                let recorder = try await sendAndWait(transport, URLRequest(url: server.url(path)))
                #expect(recorder.responses.isEmpty, "\(path)")
                let error = try #require(recorder.urlError, "\(path)")
                #expect(error.code == .networkConnectionLost, "\(path): \(error)")
            }
        }
    }

    @Test func aReplyThatIsNotHTTPFailsWithCannotParseResponse() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.raw(Data("this is not HTTP\r\n\r\n".utf8)))
            let recorder = try await sendAndWait(makeTransport(), URLRequest(url: server.url("/garbage")))
            #expect(recorder.responses.isEmpty)
            #expect(recorder.urlError?.code == .cannotParseResponse, "\(String(describing: recorder.error))")
        }
    }

    /// Linux Foundation hands libcurl `Int(timeoutInterval) * 1000` milliseconds: below a second
    /// that is zero, which libcurl reads as "time out at once". A sub-second idle timeout must not
    /// fail a response that arrives within it.
    @Test func aSubSecondIdleTimeoutDoesNotFailAPromptResponse() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("in time").delayed(by: .milliseconds(50)))
            var request = URLRequest(url: server.url("/prompt"))
            request.timeoutInterval = 0.5
            let recorder = try await sendAndWait(makeTransport(), request)
            #expect(recorder.urlError == nil, "\(String(describing: recorder.error))")
            #expect(recorder.responses.first?.text == "in time")
        }
    }

    @Test func aRefusedConnectionFailsWithAURLError() async throws {
        let port = try closedLoopbackPort()
        let recorder = try await sendAndWait(makeTransport(), URLRequest(url: URL(string: "http://127.0.0.1:\(port)/nobody")!))
        #expect(recorder.responses.isEmpty)
        let error = try #require(recorder.urlError)
        #expect([.cannotConnectToHost, .networkConnectionLost].contains(error.code), "\(error)")
    }

    @Test func cancellingASlowRequestEndsItAtOnceAndClosesTheSocket() async throws {
        let log = AttemptLog()
        try await withLoopbackServer { server in
            server.enqueue(.text("too late").delayed(by: .seconds(600)))
            let transport = makeTransport()
            let recorder = TransportRecorder()
            let token = recorder.subscribe(to: monitoredClient(transport, log).send(URLRequest(url: server.url("/slow"))))
            #expect(await server.waitUntil { server.requests.count == 1 })
            #expect(transport.activeTaskCount == 1)
            token.cancel()
            #expect(transport.activeTaskCount == 0)
            // The cancel reached the socket: the server saw the client close the connection.
            #expect(await server.waitUntil { server.clientClosedConnectionCount == 1 })
            #expect(recorder.events.isEmpty)
            #expect(log.attempts.count == 1)
            guard case .cancelled? = log.attempts.first?.outcome else {
                Issue.record("expected a cancelled transfer, got \(String(describing: log.attempts.first?.outcome))")
                return
            }
        }
    }

    @Test func releasingTheTokenCancelsTheRequest() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("too late").delayed(by: .seconds(600)))
            let transport = makeTransport()
            let recorder = TransportRecorder()
            var token: CancellationToken? = recorder.subscribe(to: transport.send(URLRequest(url: server.url("/slow"))))
            #expect(await server.waitUntil { server.requests.count == 1 })
            withExtendedLifetime(token) {}
            token = nil
            #expect(await server.waitUntil { server.clientClosedConnectionCount == 1 })
            #expect(recorder.events.isEmpty)
        }
    }

    @Test func manyConcurrentRequestsAllSucceed() async throws {
        try await withLoopbackServer(handler: { .text("echo \($0.path)") }) { server in
            let transport = makeTransport()
            let recorders = (0..<50).map { _ in TransportRecorder() }
            let tokens = recorders.enumerated().map { index, recorder in
                recorder.subscribe(to: transport.send(URLRequest(url: server.url("/item/\(index)"))))
            }
            for recorder in recorders {
                #expect(await recorder.waitForCompletion(timeout: .seconds(60)))
            }
            withExtendedLifetime(tokens) {}
            for (index, recorder) in recorders.enumerated() {
                #expect(recorder.isFinished)
                #expect(recorder.responses.map(\.text) == ["echo /item/\(index)"])
                #expect(recorder.violations == 0)
            }
            #expect(server.requests.count == 50)
            #expect(transport.activeTaskCount == 0)
        }
    }

    @Test func everySubscriptionSendsTheRequestAgain() async throws {
        try await withLoopbackServer(handler: { _ in .text("hi") }) { server in
            let transport = makeTransport()
            let signal = transport.send(URLRequest(url: server.url("/again")))
            #expect(server.requests.isEmpty) // cold: nothing sent before subscribing
            _ = try await sendAndWait(transport, URLRequest(url: server.url("/again")))
            let first = TransportRecorder()
            let second = TransportRecorder()
            let tokens = [first.subscribe(to: signal), second.subscribe(to: signal)]
            #expect(await first.waitForCompletion())
            #expect(await second.waitForCompletion())
            withExtendedLifetime(tokens) {}
            #expect(server.requests.count == 3)
        }
    }

    @Test func aNonHTTPResponseFailsWithBadServerResponse() async throws {
        // A `data:` URL is answered by Foundation itself with a plain URLResponse.
        let recorder = try await sendAndWait(makeTransport(), URLRequest(url: URL(string: "data:text/plain,hello")!))
        #expect(recorder.responses.isEmpty)
        #expect(recorder.urlError?.code == .badServerResponse)
    }

    @Test func aRequestWithoutAURLFailsWithBadURL() async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        request.url = nil
        let recorder = try await sendAndWait(makeTransport(), request)
        #expect(recorder.urlError?.code == .badURL)
    }

    @Test func releasingTheTransportInvalidatesItsSessionAndReleasesTheDelegate() async throws {
        weak var weakTransport: URLSessionTransport?
        try await withLoopbackServer(handler: { _ in .text("ok") }) { server in
            var transport: URLSessionTransport? = makeTransport()
            weakTransport = transport
            _ = try await sendAndWait(transport!, URLRequest(url: server.url("/once")))
            transport = nil
        }
        // The subscription lets the transport go right after delivering its terminal event, on
        // the session's queue, and invalidation completes there too: wait for it (bounded).
        #expect(await eventually { weakTransport == nil })
    }

    @Test func aRunningRequestKeepsItsTransportAlive() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("still delivered").delayed(by: .milliseconds(200)))
            weak var weakTransport: URLSessionTransport?
            let recorder = TransportRecorder()
            var token: CancellationToken?
            do {
                let transport = makeTransport()
                weakTransport = transport
                token = recorder.subscribe(to: transport.send(URLRequest(url: server.url("/slow"))))
            }
            #expect(weakTransport != nil)
            #expect(await recorder.waitForCompletion())
            #expect(recorder.responses.first?.text == "still delivered")
            withExtendedLifetime(token) {}
            token = nil
            #expect(await eventually { weakTransport == nil })
        }
    }
}
