import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import InMemoryTracing
import Signals
import Synchronization
import Testing
import Tracing
import Transit
import TransitObservability
import TransitTesting

/// The request of the failure run: `/start` redirects to `/data`, which answers 401 to the old
/// token and, once the token is renewed, 503 once before 200. The refresh (`POST /token`) goes
/// through a client of its own, without monitors.
struct FailureRun {
    let server: LoopbackServer
    let scheduler = TestScheduler()

    init() throws {
        let busy = Mutex(true)
        server = LoopbackServer { request in
            switch request.path {
            case "/start":
                return .status(302, headers: ["Location": "/data?api_key=QUERY-SECRET"])
            case "/data":
                guard request.value(forHTTPHeaderField: "Authorization") == "Bearer FRESH-TOKEN" else {
                    return .status(401, headers: ["WWW-Authenticate": "Bearer"])
                }
                if busy.withLock({ value in defer { value = false }; return value }) { return .text("BODY-SECRET busy", status: 503) }
                return .json(#"{"secret":"BODY-SECRET"}"#)
            case "/token":
                return .json(#"{"accessToken":"FRESH-TOKEN"}"#)
            default:
                return .status(404)
            }
        }
        try server.start()
    }

    /// A client on `transport` with `monitors`, renewing its token through a client of its own.
    func client(_ transport: any HTTPTransport, monitors: [any HTTPEventMonitor]) -> HTTPClient {
        let tokenURL = server.url("/token")
        let refresher = HTTPClient(transport: transport)
        let store = TokenStore(
            token: AuthToken(accessToken: "OLD-TOKEN"), scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
        ) { _ in
            var refresh = URLRequest(url: tokenURL)
            refresh.httpMethod = "POST"
            return refresher.send(refresh).catchHTTPErrors().tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
        }
        return HTTPClient(transport: transport) {
            $0.monitors = monitors
            $0.scheduler = scheduler
            $0.authorizer = store
        }
    }

    /// The request, retried once after a 503 from a timer of the test scheduler.
    func request(on client: HTTPClient) -> Signal<HTTPResponse, any Error> {
        var request = URLRequest(url: server.url("/start"))
        request.setValue("HEADER-SECRET", forHTTPHeaderField: "X-Api-Key")
        return client.send(request, options: RequestOptions(operationName: "getData"))
            .catchHTTPErrors()
            .retry(RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none), scheduler: scheduler)
    }

    /// Runs the request on `client` to its end: subscribed in `context`, retried when the
    /// scheduler passes the retry's wait. `waiter` is one of the client's monitors.
    func run(on client: HTTPClient, waiter: EventWaiter, in context: ServiceContext) async -> Recorder<HTTPResponse> {
        let recorder = ServiceContext.withValue(context) { Recorder(request(on: client)) }
        await waiter.wait { if case .retryScheduled = $0.kind { true } else { false } }
        scheduler.advance(by: .seconds(1))
        await waiter.wait { if case .requestEnded = $0.kind { true } else { false } }
        return recorder
    }
}

@Suite("Traces", .timeLimit(.minutes(2)))
struct TracingTests {
    @Test("URLSession: traceparent on every attempt, one trace, one request span, one client span per attempt")
    func urlSession() async throws {
        try await check(URLSessionTransport(), tracerForAsyncHTTPClient: nil)
    }

    private func check(_ transport: any HTTPTransport, tracer: W3CTestTracer = W3CTestTracer(), tracerForAsyncHTTPClient: W3CTestTracer?) async throws {
        let run = try FailureRun()
        defer { run.server.stop() }
        let waiter = EventWaiter()
        let monitor = ObservabilityMonitor(logger: nil, metrics: nil, tracer: tracer)
        let client = run.client(transport, monitors: [monitor, waiter])
        let caller = tracer.startSpan("caller")
        let recorder = await run.run(on: client, waiter: waiter, in: caller.context)
        caller.end()
        #expect(recorder.values.first?.statusCode == 200)

        // Every attempt of the request reached the server with a valid traceparent of the
        // caller's trace: 302, 401, (refresh), 302, 503, (retry from the timer), 302, 200.
        let attempts = run.server.requests.filter { $0.path != "/token" }
        #expect(attempts.map(\.path) == ["/start", "/data", "/start", "/data", "/start", "/data"])
        let parents = attempts.map { parseTraceparent($0.value(forHTTPHeaderField: "traceparent")) }
        #expect(parents.allSatisfy { $0 != nil }, "\(attempts.map { $0.value(forHTTPHeaderField: "traceparent") ?? "none" })")
        let callerTrace = try #require(caller.context.inMemorySpanContext?.traceID)
        #expect(parents.allSatisfy { $0?.traceID == callerTrace })

        // The tracer holds the caller's span, one request span under it, and one client span per
        // attempt under that, each the parent named in its attempt's traceparent.
        let spans = tracer.finishedSpans
        #expect(spans.count == 1 + 1 + 6, "\(spans.map(\.operationName))")
        let request = try #require(spans.first { $0.operationName == "getData" })
        #expect(request.parentSpanID == caller.context.inMemorySpanContext?.spanID)
        #expect(request.kind == .internal)
        #expect(request.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        let clients = spans.filter { $0.kind == .client }
        #expect(clients.count == 6)
        #expect(clients.allSatisfy { $0.parentSpanID == request.spanID && $0.traceID == callerTrace && $0.operationName == "GET" })
        #expect(Set(clients.map(\.spanID)) == Set(parents.compactMap { $0?.spanID }))

        // Conventional attributes; status error for 401 and 503.
        let byStart = clients.sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }
        let statuses = byStart.map { $0.attributes["http.response.status_code"]?.toSpanAttribute() }
        #expect(statuses == [302, 401, 302, 503, 302, 200].map { SpanAttribute.int64($0) })
        for span in clients {
            #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
            #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            #expect(span.attributes["server.port"]?.toSpanAttribute() == .int64(Int64(run.server.port)))
            #expect(span.attributes["url.scheme"]?.toSpanAttribute() == .string("http"))
            let url = span.attributes["url.full"].map { "\($0)" } ?? ""
            #expect(url.contains("127.0.0.1") && !url.contains("QUERY-SECRET"))
        }
        #expect(byStart.map { $0.attributes["http.request.resend_count"]?.toSpanAttribute() } == [nil] + (1...5).map { SpanAttribute.int64($0) })
        #expect(byStart.map { $0.status?.code == .error } == [false, true, false, true, false, false])
        // Waits and refreshes are events of the request span, with their durations.
        let names = request.events.map(\.name)
        #expect(names.contains("transit.credential_renewal.started") && names.contains("transit.credential_renewal.succeeded"))
        let retry = try #require(request.events.first { $0.name == "transit.retry" })
        #expect(retry.attributes["transit.wait.duration"]?.toSpanAttribute() == .double(1))
        #expect(names.filter { $0 == "transit.redirect" }.count == 3)

        // AsyncHTTPClient started no span of its own.
        if let tracerForAsyncHTTPClient {
            #expect(tracerForAsyncHTTPClient.finishedSpans.allSatisfy { $0.kind != .client || $0.parentSpanID == request.spanID })
        }
    }
}
