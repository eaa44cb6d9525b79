import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// `HTTPClient.events`: the request it sends, what each answer does, reconnection with
/// `Last-Event-ID` and its waits, the idle timeout, the client's policies on every connection,
/// and cancellation — over a stub transport, in virtual time.
@Suite("Server-Sent Events: the stream and its reconnection")
struct EventStreamTests {
    let scheduler = TestScheduler()
    let feed = URL(string: "https://api.example.com/feed")!
    static let eventStream = ["Content-Type": "text/event-stream"]

    /// No jitter, so every wait is the ceiling: 1 s, 2 s, 4 s…
    static let fixedBackoff = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), multiplier: 2, maxDelay: .seconds(60), jitter: .none)

    private func client(_ transport: any HTTPTransport, configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            configure(&$0)
        }
    }

    private func options(idleTimeout: Duration? = nil, reconnection: RetryPolicy? = fixedBackoff) -> EventStreamOptions {
        EventStreamOptions(idleTimeout: idleTimeout, reconnection: reconnection)
    }

    private static func stream(_ text: String..., thenFail failure: (any Error)? = nil, status: Int = 200) -> StubResponse {
        .chunks(text.map { Data($0.utf8) }, status: status, headers: eventStream, thenFail: failure)
    }

    private var lost: URLError { URLError(.networkConnectionLost) }

    // MARK: The request

    @Test func theRequestAsksForAnEventStreamWithoutCachingAndNoLastEventIDAtFirst() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(Self.stream("data: a\n\n"))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(reconnection: nil)))
        #expect(probe.values == [ServerSentEvent(data: "a")])
        #expect(probe.isFinished)
        let request = try #require(transport.requests.first)
        #expect(request.value(forHTTPHeaderField: "Accept") == "text/event-stream")
        #expect(request.value(forHTTPHeaderField: "Cache-Control") == "no-cache")
        #expect(request.value(forHTTPHeaderField: "Last-Event-ID") == nil)
    }

    @Test func theCallersOwnAcceptAndAStoredLastEventIDAreSent() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(Self.stream("data: a\n\n"))
        var request = URLRequest(url: feed)
        request.setValue("text/event-stream; q=1", forHTTPHeaderField: "Accept")
        var options = options(reconnection: nil)
        options.lastEventID = "99"
        let probe = RequestProbe(client(transport).events(request, options: options))
        #expect(probe.values == [ServerSentEvent(id: "99", data: "a")])
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "Accept") == "text/event-stream; q=1")
        #expect(sent.value(forHTTPHeaderField: "Last-Event-ID") == "99")
    }

    // MARK: Reconnection

    @Test func aStreamThatEndsReconnectsAfterTheServersRetryWithLastEventID() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("retry: 2500\nid: 1\ndata: a\n\n"))
            .thenRespond(Self.stream("id: 2\ndata: b\n\n"))
            .thenRespond(.status(204))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        #expect(probe.values.map(\.data) == ["a"])
        scheduler.advance(by: .milliseconds(2499))
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .milliseconds(1))
        #expect(transport.requests.count == 2)
        #expect(transport.requests[1].value(forHTTPHeaderField: "Last-Event-ID") == "1")
        #expect(probe.values == [
            ServerSentEvent(id: "1", data: "a", retry: .milliseconds(2500)),
            ServerSentEvent(id: "2", data: "b", retry: .milliseconds(2500)),
        ])
        scheduler.advance(by: .milliseconds(2500))
        #expect(transport.requests.count == 3)
        #expect(transport.requests[2].value(forHTTPHeaderField: "Last-Event-ID") == "2")
        #expect(probe.isFinished)  // the 204
        #expect(probe.terminalCount == 1 && probe.violations == 0)
    }

    @Test func aConnectionDroppedMidEventReconnectsAndDeliversEveryEventExactlyOnce() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("id: 1\ndata: one\n\nid: 2\ndata: tw", thenFail: lost))
            .thenRespond { request in
                // The server resends what follows the last event ID it is told.
                request.value(forHTTPHeaderField: "Last-Event-ID") == "1"
                    ? Self.stream("id: 2\ndata: two\n\nid: 3\ndata: three\n\n") : .status(400)
            }
            .thenRespond(.status(204))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(10))
        #expect(probe.values.map(\.data) == ["one", "two", "three"])
        #expect(probe.values.map(\.id) == ["1", "2", "3"])
        #expect(probe.isFinished)
    }

    @Test func withoutAServerRetryTheWaitsBackOffAndQuietConnectionsRunOut() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("data: a\n\n"))
            .thenRespond(Self.stream(": nothing\n"))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        var times: [Duration] = []
        for _ in 0..<40 {
            let before = transport.requests.count
            scheduler.advance(by: .milliseconds(250))
            if transport.requests.count > before { times.append(scheduler.now) }
        }
        // After the event, 1 s; then each quiet connection doubles the wait: 2 s, then 4 s… until
        // three in a row have ended without an event.
        #expect(times == [.seconds(1), .seconds(3), .seconds(7)])
        #expect(probe.failure as? ServerSentEventError == .reconnectionsExhausted(attempts: 3))
        #expect(transport.requests.count == 4)
    }

    @Test func aConnectionThatDeliversAnEventStartsTheCountAgain() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("data: a\n\n"))
            .thenRespond(Self.stream(": quiet\n"))
            .thenRespond(Self.stream(": quiet\n"))
            .thenRespond(Self.stream("data: b\n\n"))
            .thenRespond(Self.stream(": quiet\n"))
            .thenRespond(.status(204))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(60))
        #expect(probe.values.map(\.data) == ["a", "b"])
        #expect(probe.isFinished)
        #expect(transport.requests.count == 6)
    }

    @Test func theBackOffIsLongerThanTheServersRetryWhenConnectionsKeepFailing() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("retry: 100\ndata: a\n\n"))
            .thenRespond(.failure(URLError(.cannotConnectToHost)))
            .thenRespond(.status(204))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .milliseconds(100))
        #expect(transport.requests.count == 2)  // the server's retry after an event
        scheduler.advance(by: .milliseconds(1999))
        #expect(transport.requests.count == 2)  // then the back-off of a second attempt: 2 s
        scheduler.advance(by: .milliseconds(1))
        #expect(transport.requests.count == 3)
        #expect(probe.isFinished)
    }

    @Test func aFailureThatIsNotADroppedConnectionFailsWithoutReconnecting() {
        struct Broken: Error {}
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(Self.stream("data: a\n\n", thenFail: Broken()))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(60))
        #expect(probe.failure is Broken || (probe.failure as? TransportError)?.underlying is Broken)
        #expect(transport.requests.count == 1)
    }

    @Test func theFirstConnectionsFailureIsTheStreamsOwn() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(.failure(URLError(.cannotConnectToHost)))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(60))
        #expect(probe.failure.flatMap(RetryPolicy.urlErrorCode(of:)) == .cannotConnectToHost)
        #expect(transport.requests.count == 1)
    }

    @Test func withoutReconnectionTheStreamFinishesAtTheEndAndFailsAtADrop() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("data: a\n\ndata: cut"))
            .thenRespond(Self.stream("data: b\n\n", thenFail: lost))
        let ended = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(reconnection: nil)))
        #expect(ended.values.map(\.data) == ["a"])
        #expect(ended.isFinished)
        let dropped = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(reconnection: nil)))
        #expect(dropped.values.map(\.data) == ["b"])
        #expect(dropped.failure.flatMap(RetryPolicy.urlErrorCode(of:)) == .networkConnectionLost)
    }

    // MARK: Answers

    @Test func a204FinishesTheStreamAtOnce() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(.status(204))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        #expect(probe.isFinished && probe.values.isEmpty)
        scheduler.advance(by: .seconds(60))
        #expect(transport.requests.count == 1)
    }

    @Test func anErrorStatusFailsWithItsHTTPErrorAndBody() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(.text("down for maintenance", status: 503))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        let error = probe.failure as? HTTPServerError
        #expect(error?.statusCode == 503)
        #expect(error?.response.map { String(decoding: $0.data, as: UTF8.self) } == "down for maintenance")
        scheduler.advance(by: .seconds(60))
        #expect(transport.requests.count == 1)
    }

    @Test func anErrorStatusOnAReconnectionFailsTheStream() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("data: a\n\n"))
            .thenRespond(.status(404))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(60))
        #expect((probe.failure as? HTTPClientError)?.statusCode == 404)
        #expect(transport.requests.count == 2)
    }

    @Test func aWrongContentTypeOrAnotherStatusFails() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/html").thenRespond(.text("<html>", headers: ["Content-Type": "text/html"]))
        transport.stub(.get, path: "/none").thenRespond(.status(200, body: Data("data: a\n\n".utf8)))
        transport.stub(.get, path: "/accepted").thenRespond(.status(202, headers: Self.eventStream))
        transport.stub(.get, path: "/params").thenRespond(.text("data: a\n\n", headers: ["Content-Type": " Text/Event-Stream ; charset=utf-8"]))
        let client = client(transport)
        let url = { (path: String) in URLRequest(url: URL(string: "https://api.example.com\(path)")!) }
        #expect(RequestProbe(client.events(url("/html"))).failure as? ServerSentEventError == .notAnEventStream(contentType: "text/html"))
        #expect(RequestProbe(client.events(url("/none"))).failure as? ServerSentEventError == .notAnEventStream(contentType: nil))
        #expect(RequestProbe(client.events(url("/accepted"))).failure as? ServerSentEventError == .unexpectedStatus(202))
        #expect(RequestProbe(client.events(url("/params"), options: options(reconnection: nil))).values.map(\.data) == ["a"])
    }

    @Test func aLineOverTheLimitFailsTheStreamAndClosesTheConnection() {
        let transport = StubTransport(scheduler: scheduler)
        let chunk = String(repeating: "x", count: 1000)
        transport.stub(.get, path: "/feed").thenRespond(.chunks(
            Array(repeating: Data(chunk.utf8), count: 100), headers: Self.eventStream, every: .seconds(1)
        ))
        var options = options()
        options.maxLineBytes = 4096
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options))
        scheduler.advance(by: .seconds(4))
        #expect(probe.events.isEmpty)  // 4,000 bytes of one line
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? ServerSentEventError == .lineTooLong(limit: 4096))
        #expect(scheduler.pendingCount == 0)  // the stub's next chunk is no longer scheduled
    }

    // MARK: The idle timeout

    @Test func aStalledConnectionIsClosedAndReconnectedThenFailsWhenReconnectionRunsOut() throws {
        let transport = ManualTransport()
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(idleTimeout: .seconds(30))))
        let first = try #require(transport.connection(0))
        scheduler.advance(by: .seconds(20))
        first.send(.head(HTTPResponseHead(url: feed, statusCode: 200, headerFields: Self.eventStream)))
        scheduler.advance(by: .seconds(20))
        first.send(.body(Data("id: 1\ndata: a\n\n".utf8)))  // at 40 s
        scheduler.advance(by: .seconds(29))
        #expect(!first.isCancelled)
        scheduler.advance(by: .seconds(1))  // silent since 40 s: stalled at 70 s
        #expect(first.isCancelled)
        #expect(transport.count == 1)
        scheduler.advance(by: .seconds(1))  // reconnected after the back-off (1 s)
        let second = try #require(transport.connection(1))
        #expect(second.request.value(forHTTPHeaderField: "Last-Event-ID") == "1")
        // The reconnections stall before answering: 30 s each, then 2 s, 4 s of back-off.
        scheduler.advance(by: .seconds(30 + 2 + 30 + 4 + 30))
        #expect(transport.count == 4)
        #expect(probe.failure as? ServerSentEventError == .stalled(idleTimeout: .seconds(30)))
        #expect(probe.values.map(\.data) == ["a"])
        #expect(transport.connections.allSatisfy { $0.isCancelled })
        #expect(scheduler.pendingCount == 0)
    }

    @Test func bytesArrivingInTimeKeepTheConnection() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(.chunks(Array(repeating: Data(": keep-alive\n".utf8), count: 20), headers: Self.eventStream, every: .seconds(25)))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(idleTimeout: .seconds(30))))
        scheduler.advance(by: .seconds(25 * 19))
        #expect(transport.requests.count == 1)
        #expect(probe.events.isEmpty)
        probe.cancel()
    }

    @Test func aFirstConnectionThatNeverAnswersFailsAsStalled() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(.pending)
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(idleTimeout: .seconds(30))))
        scheduler.advance(by: .seconds(30))
        #expect(probe.failure as? ServerSentEventError == .stalled(idleTimeout: .seconds(30)))
        #expect(transport.requests.count == 1)
    }

    // MARK: The client's policies

    @Test func a401OnAReconnectionRenewsTheTokenThenReconnects() throws {
        let transport = StubTransport(scheduler: scheduler)
        let refreshes = SharedValue(0)
        let store = TokenStore(token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.com"])) { _ in
            refreshes.update { $0 += 1 }
            return Signal(value: AuthToken(accessToken: "new"))
        }
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("id: 1\ndata: a\n\n"))
            .thenRespond(.status(401))
            .thenRespond(Self.stream("id: 2\ndata: b\n\n"))
            .thenRespond(.status(204))
        let probe = RequestProbe(client(transport) { $0.authorizer = store }.events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(10))
        #expect(probe.values.map(\.data) == ["a", "b"])
        #expect(probe.isFinished)
        #expect(refreshes.value == 1)
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer old", "Bearer old", "Bearer new", "Bearer new"])
        #expect(transport.requests.dropFirst().allSatisfy { $0.value(forHTTPHeaderField: "Last-Event-ID") == "1" || $0.value(forHTTPHeaderField: "Last-Event-ID") == "2" })
    }

    @Test func everyReconnectionWaitsForTheRateLimit() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("retry: 0\ndata: a\n\n"))
            .thenRespond(Self.stream("data: b\n\n"))
            .thenRespond(.status(204))
        let client = client(transport) { $0.rateLimiter = RateLimiter(requestsPerSecond: 0.1) }
        let probe = RequestProbe(client.events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(9))
        #expect(transport.requests.count == 1)  // the server asked for no wait; the client's limit holds it
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 2)
        scheduler.advance(by: .seconds(20))
        #expect(probe.values.map(\.data) == ["a", "b"])
        #expect(probe.isFinished)
    }

    @Test func theRESTAPIVerbBuildsTheRequestAgainForEveryConnection() {
        struct Feed: RESTAPI {
            let baseURL = "https://api.example.com"
            let client: HTTPClient
        }
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed")
            .thenRespond(Self.stream("id: 1\ndata: a\n\n"))
            .thenRespond(.status(204))
        let count = SharedValue(0)
        let probe = RequestProbe(Feed(client: client(transport)).events(endpoint: "feed", options: options()) { request in
            let attempt = count.update { $0 += 1; return $0 }
            return try request.addingValue("\(attempt)", forHTTPHeaderField: "X-Attempt")
        })
        scheduler.advance(by: .seconds(10))
        #expect(probe.isFinished)
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Attempt") } == ["1", "2"])
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") } == [nil, "1"])
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" })
    }

    // MARK: Cancellation

    @Test func cancellingClosesTheConnectionAtOnce() throws {
        let transport = ManualTransport()
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(idleTimeout: .seconds(30))))
        let connection = try #require(transport.connection(0))
        connection.send(.head(HTTPResponseHead(url: feed, statusCode: 200, headerFields: Self.eventStream)))
        connection.send(.body(Data("data: a\n\n".utf8)))
        #expect(probe.values.map(\.data) == ["a"])
        probe.cancel()
        #expect(connection.isCancelled)
        #expect(scheduler.pendingCount == 0)  // the idle check is gone
        connection.send(.body(Data("data: b\n\n".utf8)))
        scheduler.advance(by: .seconds(60))
        #expect(probe.values.count == 1 && probe.terminalCount == 0)
        #expect(transport.count == 1)
    }

    @Test func cancellingDuringTheWaitDropsTheReconnection() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/feed").thenRespond(Self.stream("retry: 5000\ndata: a\n\n"))
        let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options()))
        scheduler.advance(by: .seconds(1))
        probe.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(60))
        #expect(transport.requests.count == 1)
    }

    @Test func aFinishedStreamReleasesItsSubscription() {
        weak var weakTransport: StubTransport?
        do {
            let transport = StubTransport(scheduler: scheduler)
            weakTransport = transport
            transport.stub(.get, path: "/feed").thenRespond(Self.stream("data: a\n\n")).thenRespond(.status(204))
            let probe = RequestProbe(client(transport).events(URLRequest(url: feed), options: options(idleTimeout: .seconds(30))))
            scheduler.advance(by: .seconds(10))
            #expect(probe.isFinished)
        }
        #expect(weakTransport == nil)
    }
}

/// A transport whose every connection the test drives by hand: it sends each part when it likes
/// and sees when the client cancels.
final class ManualTransport: HTTPTransport {
    final class Connection: Sendable {
        let request: URLRequest
        private let observer: Observer<HTTPResponsePart, any Error>
        private let cancelled = Locked(false)

        init(request: URLRequest, observer: Observer<HTTPResponsePart, any Error>) {
            self.request = request
            self.observer = observer
        }

        var isCancelled: Bool { cancelled.withLock { $0 } }
        func cancel() { cancelled.withLock { $0 = true } }
        func send(_ part: HTTPResponsePart) { observer.send(part) }
        func finish() { observer.finish() }
        func fail(_ error: any Error) { observer.fail(error) }
    }

    private let state = Locked<[Connection]>([])

    var connections: [Connection] { state.withLock { $0 } }
    var count: Int { connections.count }
    func connection(_ index: Int) -> Connection? { state.withLock { index < $0.count ? $0[index] : nil } }

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [state] observer in
            let connection = Connection(request: request.urlRequest, observer: observer)
            state.withLock { $0.append(connection) }
            return { connection.cancel() }
        }
    }
}
