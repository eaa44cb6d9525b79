import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A monitor that records its events, captures a task-local value per request and adds a
/// `Trace` field naming the request's captured value and the attempt to every attempt.
private final class TracingLog: HTTPEventMonitor {
    @TaskLocal static var caller: String?

    private let state = Locked<[HTTPEvent]>([])
    let log = EventLog()

    func receive(_ event: HTTPEvent) {
        state.withLock { $0.append(event) }
        log.receive(event)
    }

    func captureRequestContext() -> (any Sendable)? {
        Self.caller
    }

    func headerFields(forAttempt event: HTTPEvent) -> [HTTPField] {
        guard case .attemptStarted(let id) = event.kind else { return [] }
        return [
            HTTPField(name: "Trace", value: "\(event.context as? String ?? "none")/\(id)/\(event.resendCount ?? -1)"),
            HTTPField(name: "Bad Name", value: "dropped"),
        ]
    }

    var events: [HTTPEvent] { state.withLock { $0 } }

    /// The closing events, with their request identities.
    var ends: [(id: UInt64?, outcome: HTTPEvent.RequestOutcome)] {
        events.compactMap { if case .requestEnded(let outcome) = $0.kind { ($0.requestID, outcome) } else { nil } }
    }

    /// The closing outcome as a word and status.
    static func describe(_ outcome: HTTPEvent.RequestOutcome) -> String {
        switch outcome {
        case .completed(let status): "completed \(status.map(String.init) ?? "-")"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}

@Suite("Request identity, closing event, header fields and context")
struct RequestIdentityTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    /// A client whose `/a` redirects to `/b`; `/b` answers 401 to the old token, then 503 once,
    /// then 200. The token store renews the token (its own request goes through the client).
    private func failingClient(monitor: TracingLog) -> (StubTransport, HTTPClient) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(.status(302, headers: ["Location": "/b"]))
        let busy = Locked(true)
        transport.stub(.get, path: "/b").thenRespond { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer new" else { return .status(401) }
            let first = busy.withLock { value in
                defer { value = false }
                return value
            }
            if first { return .status(503) }
            return .text("ok")
        }
        transport.stub(.post, path: "/token").thenRespond(.json(#"{"accessToken":"new"}"#).delayed(by: .milliseconds(100)))
        let box = Locked<HTTPClient?>(nil)
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.test"])) { _ in
            var refresh = URLRequest(url: URL(string: "https://api.example.test/token")!)
            refresh.httpMethod = "POST"
            return box.withLock { $0! }.send(refresh)
                .catchHTTPErrors()
                .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
        }
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        box.withLock { $0 = client }
        return (transport, client)
    }

    @Test func aRedirectedRenewedAndRetriedRequestIsOneRequestWithItsContextAndFieldsOnEveryAttempt() throws {
        let monitor = TracingLog()
        let (transport, client) = failingClient(monitor: monitor)
        let policy = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(1), jitter: .none)
        let options = RequestOptions(operationName: "getThing")
        // Subscribed where the caller's task-local value is set; the retry is subscribed later,
        // from the scheduler's timer, where it is not.
        let probe = TracingLog.$caller.withValue("caller-1") {
            RequestProbe(client.send(get("https://api.example.test/a"), options: options).catchHTTPErrors().retry(policy, scheduler: scheduler))
        }
        #expect(TracingLog.caller == nil)
        scheduler.advance(by: .seconds(2))
        #expect(probe.values.first?.text == "ok")

        let own = monitor.events.filter { $0.request?.url?.path != "/token" }
        let ids = Set(own.compactMap(\.requestID))
        try #require(ids.count == 1, "\(own.map { "\(EventLog.name(of: $0.kind)) \($0.requestID ?? 0) \($0.request?.url?.path ?? "-")" })")
        #expect(own.allSatisfy { $0.requestID != nil && $0.operationName == "getThing" && $0.context as? String == "caller-1" })
        // The token refresh's own request is another request, without the caller's context
        // (it is subscribed by the store, not by the caller).
        let refresh = monitor.events.filter { $0.request?.url?.path == "/token" }
        #expect(!refresh.isEmpty && Set(refresh.compactMap(\.requestID)).isDisjoint(with: ids))

        // Attempts: /a (302), /b (401), /a again with the new token (302), /b (503); retry: /a, /b.
        let started = own.filter { if case .attemptStarted = $0.kind { true } else { false } }
        #expect(started.map { $0.request?.url?.path } == ["/a", "/b", "/a", "/b", "/a", "/b"])
        #expect(started.map(\.resendCount) == [0, 1, 2, 3, 4, 5])
        let ended = own.filter { if case .attemptEnded = $0.kind { true } else { false } }
        #expect(ended.map(\.resendCount) == [0, 1, 2, 3, 4, 5])

        // Every attempt reached the transport with the monitor's field (its context, its attempt
        // and resend count); the invalid field was dropped.
        let sent = transport.requests.filter { $0.url?.path != "/token" }
        let attemptIDs = started.compactMap { if case .attemptStarted(let id) = $0.kind { id } else { nil } }
        #expect(sent.map { $0.value(forHTTPHeaderField: "Trace") } == zip(attemptIDs, 0...).map { "caller-1/\($0)/\($1)" })
        #expect(sent.allSatisfy { $0.value(forHTTPHeaderField: "Bad Name") == nil })
        // The attempt's end carries the request as sent, with the field.
        #expect(ended.allSatisfy { $0.request?.value(forHTTPHeaderField: "Trace")?.hasPrefix("caller-1/") == true })

        // One closing event, the last of the request, completed with the final status.
        let ends = monitor.ends.filter { ids.contains($0.id ?? 0) }
        #expect(ends.map { TracingLog.describe($0.outcome) } == ["completed 200"])
        #expect(own.last.map { EventLog.name(of: $0.kind) } == "requestEnded")
        // The refresh's own request ended once too.
        #expect(monitor.ends.count == 2)
    }

    @Test func identicalRequestsInFlightHaveTheirOwnIdentities() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/x").thenRespond(.text("x").delayed(by: .seconds(1)))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let signal = client.send(get("https://api.example.test/x"))
        let probes = (0..<3).map { _ in RequestProbe(signal) }
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.isFinished })
        let starts = monitor.events.filter { if case .requestStarted = $0.kind { true } else { false } }
        #expect(Set(starts.compactMap(\.requestID)).count == 3)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 200", "completed 200", "completed 200"])
        #expect(Set(monitor.ends.compactMap(\.id)) == Set(starts.compactMap(\.requestID)))
        // No context captured: none given back.
        #expect(monitor.events.allSatisfy { $0.context == nil && $0.operationName == nil })
    }

    @Test func aFailedRequestEndsOnceWithItsErrorAndACancelledOneAsCancelled() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/down").thenRespond(.failure(URLError(.cannotConnectToHost)))
        transport.stub(.get, path: "/slow").thenRespond(.text("late").delayed(by: .seconds(5)))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let failed = RequestProbe(client.send(get("https://api.example.test/down")))
        #expect(failed.failure != nil)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["failed"])
        let slow = RequestProbe(client.send(get("https://api.example.test/slow")))
        scheduler.advance(by: .seconds(1))
        slow.cancel()
        slow.cancel()
        scheduler.advance(by: .seconds(10))
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["failed", "cancelled"])
    }

    @Test func aRetryCancelledDuringItsWaitEndsTheRequestOnceAsCancelled() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/busy").thenRespond(.status(503))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), jitter: .none)
        let probe = RequestProbe(client.send(get("https://api.example.test/busy")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        // The first attempt failed; the retry waits: the request has not ended.
        #expect(monitor.ends.isEmpty)
        probe.cancel()
        scheduler.advance(by: .seconds(10))
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["cancelled"])
        #expect(transport.requests.count == 1)
    }

    @Test func aRetryThatGivesUpEndsTheRequestOnceWithTheLastAnswer() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/busy").thenRespond(.status(503))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), jitter: .none)
        let probe = RequestProbe(client.send(get("https://api.example.test/busy")).catchHTTPErrors().retry(policy, scheduler: scheduler))
        scheduler.advance(by: .seconds(10))
        #expect(probe.failure is HTTPServerError)
        #expect(transport.requests.count == 3)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 503"])
        #expect(Set(monitor.events.compactMap(\.requestID)).count == 1)
    }

    @Test func rateLimitingsRetryContinuesTheRequest() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/limited").thenRespond(.status(429, headers: ["Retry-After": "2"])).thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let probe = TracingLog.$caller.withValue("caller-2") {
            RequestProbe(client.send(get("https://api.example.test/limited")).catchHTTPErrors().respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler))
        }
        scheduler.advance(by: .seconds(2))
        #expect(probe.values.first?.text == "ok")
        #expect(Set(monitor.events.compactMap(\.requestID)).count == 1)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 200"])
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Trace")?.hasPrefix("caller-2/") } == [true, true])
    }

    @Test func streamsEndOnceWhenFinishedOrCancelled() {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/stream")
            .thenRespond(.chunks([Data("a".utf8), Data("b".utf8), Data("c".utf8)], every: .seconds(1)))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let finished = RequestProbe(client.stream(get("https://api.example.test/stream")))
        scheduler.advance(by: .seconds(5))
        #expect(finished.isFinished)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 200"])

        let cancelled = RequestProbe(client.stream(get("https://api.example.test/stream")))
        scheduler.advance(by: .seconds(1))
        #expect(cancelled.values.count >= 1)
        cancelled.cancel()
        scheduler.advance(by: .seconds(5))
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 200", "cancelled"])
        #expect(monitor.ends.map(\.id).allSatisfy { $0 != nil })
    }

    @Test func aFinishedDownloadEndsOnce() throws {
        let monitor = TracingLog()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/file").thenRespond(.chunks([Data("12".utf8), Data("34".utf8)], every: .seconds(1)))
        let client = HTTPClient(transport: transport) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let probe = RequestProbe(client.download(get("https://api.example.test/file"), to: folder.appendingPathComponent("file")))
        scheduler.advance(by: .seconds(5))
        #expect(probe.isFinished)
        #expect(monitor.ends.map { TracingLog.describe($0.outcome) } == ["completed 200"])
    }

    @Test func anInvalidRequestNeverStartsAndSoNeverEnds() {
        let monitor = TracingLog()
        let client = HTTPClient(transport: StubTransport(scheduler: scheduler)) {
            $0.monitors = [monitor]
            $0.scheduler = scheduler
        }
        let probe = RequestProbe(client.send(get("ftp://api.example.test/x")))
        #expect(probe.failure is URLRequestError)
        #expect(monitor.events.isEmpty)
    }
}
