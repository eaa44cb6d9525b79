import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// The URLError code of a failure from a client: bare, or inside the client's wrapper
/// (``TransportError``, for failures of the transport and the deadline).
func urlErrorCode(_ error: (any Error)?) -> URLError.Code? {
    (error as? TransportError)?.code ?? (error as? URLError)?.code
}

/// The streaming seam over `StubTransport`: buffering limits, streams, downloads, redirects and
/// deadlines, in virtual time.
@Suite("Seam: limits, streams, downloads, redirects, deadlines")
struct SeamTests {
    let scheduler = TestScheduler()

    private func client(_ transport: StubTransport, _ configure: (inout ClientSettings) -> Void = { _ in }) -> HTTPClient {
        var settings = ClientSettings()
        configure(&settings)
        return HTTPClient(transport: transport) {
            $0.maxResponseBytes = settings.maxResponseBytes
            $0.deadline = settings.deadline
            $0.redirectPolicy = settings.redirectPolicy
            $0.sensitiveHeaders = settings.sensitiveHeaders
            $0.scheduler = scheduler
        }
    }

    struct ClientSettings {
        var maxResponseBytes = 1024
        var deadline = Deadline.after(.seconds(30))
        var redirectPolicy = RedirectPolicy.follow
        var sensitiveHeaders: Set<String> = []
    }

    private func request(_ url: String, _ headers: [String: String] = [:], method: String = "GET") -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    // MARK: buffered responses and their limit

    @Test func aBodyWithinTheLimitIsBufferedWhole() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(.chunks([Data(repeating: 1, count: 600), Data(repeating: 2, count: 424)]))
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/a")))
        #expect(probe.isFinished)
        #expect(probe.values.first?.data.count == 1024)
        #expect(probe.values.first?.data.last == 2)
    }

    @Test func aDeclaredContentLengthOverTheLimitFailsAtTheHeadBeforeAnyBody() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/big").thenRespond(
            .chunks([Data(count: 10)], headers: ["Content-Length": "5000"], every: .seconds(1))
        )
        // No deadline, so the only pending actions are the transfer's own.
        let probe = RequestProbe(client(transport) { $0.deadline = .unlimited }.send(request("https://api.example.com/big")))
        let error = probe.failure as? ResponseTooLargeError
        #expect(error == ResponseTooLargeError(limit: 1024, declaredLength: 5000))
        #expect(error?.description.contains("1024") == true)
        // The transfer was cancelled: its pending chunk is never delivered.
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(5))
        #expect(probe.terminalCount == 1)
        #expect(probe.violations == 0)
    }

    @Test func receivedBytesOverTheLimitFailWithTheChunkThatCrossesIt() {
        let transport = StubTransport(scheduler: scheduler)
        let chunk = Data(repeating: 7, count: 400)
        transport.stub(.get, path: "/trickle").thenRespond(.chunks(Array(repeating: chunk, count: 10), every: .seconds(1)))
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/trickle")))
        scheduler.advance(by: .seconds(2))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 1024))
        scheduler.advance(by: .seconds(20))
        #expect(probe.terminalCount == 1)
        #expect(probe.violations == 0)
    }

    @Test func aRequestCanRaiseOrLowerTheClientsLimit() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(200, body: Data(count: 2000)))
        let http = client(transport)
        let raised = RequestProbe(http.send(request("https://api.example.com/x"), options: RequestOptions(maxResponseBytes: 4096)))
        #expect(raised.values.first?.data.count == 2000)
        let lowered = RequestProbe(http.send(request("https://api.example.com/x"), options: RequestOptions(maxResponseBytes: 10)))
        #expect(lowered.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 10))
    }

    @Test func theDefaultLimitIs32MiB() {
        #expect(HTTPClient.defaultMaxResponseBytes == 32 * 1024 * 1024)
        #expect(HTTPClient(transport: StubTransport()).configuration.maxResponseBytes == 32 * 1024 * 1024)
    }

    // MARK: streams

    @Test func aStreamDeliversTheHeadThenEachChunkAsItArrives() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/s").thenRespond(.chunks([Data("ab".utf8), Data("cd".utf8)], headers: ["X-Kind": "s"], every: .seconds(1)))
        let probe = RequestProbe(client(transport).stream(request("https://api.example.com/s")))
        guard case .head(let head)? = probe.values.first else {
            Issue.record("no head first: \(probe.events)")
            return
        }
        #expect(head.value(forHTTPHeaderField: "X-Kind") == "s")
        #expect(probe.values.count == 1)
        scheduler.advance(by: .seconds(1))
        #expect(probe.values.count == 2)
        scheduler.advance(by: .seconds(1))
        let chunks = probe.values.compactMap { part -> String? in
            if case .body(let data) = part { return String(decoding: data, as: UTF8.self) }
            return nil
        }
        #expect(chunks == ["ab", "cd"])
        #expect(probe.isFinished)
    }

    @Test func aStreamIsNotLimitedUnlessTheRequestAsks() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.chunks(Array(repeating: Data(count: 1000), count: 5)))
        let http = client(transport)
        let free = RequestProbe(http.stream(request("https://api.example.com/s")))
        #expect(free.isFinished)
        #expect(free.values.count == 6)
        let limited = RequestProbe(http.stream(request("https://api.example.com/s"), options: RequestOptions(maxResponseBytes: 2500)))
        #expect(limited.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 2500))
        #expect(limited.values.count == 3)
    }

    @Test func cancellingAStreamStopsTheTransfer() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.chunks(Array(repeating: Data(count: 10), count: 5), every: .seconds(1)))
        let probe = RequestProbe(client(transport).stream(request("https://api.example.com/s")))
        scheduler.advance(by: .seconds(1))
        probe.cancel()
        scheduler.advance(by: .seconds(10))
        #expect(probe.values.count == 2)
        #expect(probe.terminalCount == 0)
    }

    // MARK: deadlines

    @Test func aTrickleCannotOutliveTheDeadline() {
        let transport = StubTransport(scheduler: scheduler)
        // A byte a second, forever as far as the client is concerned.
        transport.stub(.get).thenRespond(.chunks(Array(repeating: Data([1]), count: 1000), every: .seconds(1)))
        let probe = RequestProbe(client(transport) { $0.deadline = .after(.seconds(5)) }.send(request("https://api.example.com/slow")))
        scheduler.advance(by: .milliseconds(4999))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(urlErrorCode(probe.failure) == .timedOut)
        scheduler.advance(by: .seconds(2000))
        #expect(probe.terminalCount == 1)
        #expect(probe.violations == 0)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func aRequestCanOverrideTheDeadline() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(200).delayed(by: .seconds(60)))
        let http = client(transport) { $0.deadline = .after(.seconds(5)) }
        let longer = RequestProbe(http.send(request("https://api.example.com/a"), options: RequestOptions(deadline: .after(.seconds(90)))))
        let unlimited = RequestProbe(http.send(request("https://api.example.com/a"), options: RequestOptions(deadline: .unlimited)))
        let client = RequestProbe(http.send(request("https://api.example.com/a")))
        scheduler.advance(by: .seconds(60))
        #expect(longer.values.first?.statusCode == 200)
        #expect(unlimited.values.first?.statusCode == 200)
        #expect(urlErrorCode(client.failure) == .timedOut)
    }

    @Test func streamsHaveNoDeadlineUnlessTheirOptionsSetOne() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.chunks([Data([1]), Data([2])], every: .seconds(100)))
        let http = client(transport) { $0.deadline = .after(.seconds(5)) }
        let free = RequestProbe(http.stream(request("https://api.example.com/s")))
        let bounded = RequestProbe(http.stream(request("https://api.example.com/s"), options: RequestOptions(deadline: .after(.seconds(50)))))
        scheduler.advance(by: .seconds(200))
        #expect(free.isFinished)
        #expect(urlErrorCode(bounded.failure) == .timedOut)
    }

    @Test func aStreamsDeadlineDeliversWhatArrivedInTimeThenFailsOnceCarryingTheRequest() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.chunks([Data([1]), Data([2]), Data([3])], every: .seconds(10)))
        let http = client(transport)
        let probe = RequestProbe(http.stream(request("https://api.example.com/s"), options: RequestOptions(deadline: .after(.seconds(15)))))
        scheduler.advance(by: .seconds(14))
        #expect(probe.values.count == 2)   // the head and the first chunk
        #expect(probe.terminalCount == 0)
        scheduler.advance(by: .seconds(1))
        let failure = try #require(probe.failure as? TransportError, "not a TransportError: \(String(describing: probe.failure))")
        #expect(failure.code == .timedOut)
        #expect(failure.request.url?.absoluteString == "https://api.example.com/s")
        scheduler.advance(by: .seconds(100))
        #expect(probe.values.count == 2)
        #expect(probe.terminalCount == 1)
        #expect(probe.violations == 0)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func aStreamThatEndsBeforeItsDeadlineLeavesNothingPending() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.chunks([Data([1]), Data([2])], every: .seconds(1)))
        let probe = RequestProbe(client(transport).stream(request("https://api.example.com/s"), options: RequestOptions(deadline: .after(.seconds(50)))))
        scheduler.advance(by: .seconds(2))
        #expect(probe.isFinished)
        #expect(probe.values.count == 3)
        scheduler.advance(by: .seconds(100))
        #expect(probe.terminalCount == 1)
        #expect(probe.violations == 0)
        #expect(scheduler.pendingCount == 0)
    }

    // MARK: redirects

    private func redirect(_ status: Int, to location: String) -> StubResponse {
        .status(status, headers: ["Location": location], body: Data("moved".utf8))
    }

    @Test func aCrossOriginRedirectDropsCredentialsAndSensitiveHeaders() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(redirect(302, to: "https://cdn.example.net/file"))
        transport.stub(matching: { $0.url?.host == "cdn.example.net" }).thenRespond(.text("file"))
        let http = client(transport) { $0.sensitiveHeaders = ["X-API-Key"] }
        let probe = RequestProbe(http.send(request("https://api.example.com/file", [
            "Authorization": "Bearer secret", "Cookie": "session=1", "Proxy-Authorization": "Basic x",
            "x-api-key": "k", "Accept": "text/plain",
        ])))
        #expect(probe.values.first?.text == "file")
        #expect(probe.values.first?.head.urlResponse.url?.host == "cdn.example.net")
        let second = try #require(transport.requests.last)
        #expect(second.url?.absoluteString == "https://cdn.example.net/file")
        for name in ["Authorization", "Cookie", "Proxy-Authorization", "X-API-Key"] {
            #expect(second.value(forHTTPHeaderField: name) == nil, "\(name) crossed origins")
        }
        #expect(second.value(forHTTPHeaderField: "Accept") == "text/plain")
    }

    @Test func aSameOriginRedirectKeepsCredentials() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/old").thenRespond(redirect(301, to: "/new"))
        transport.stub(.get, path: "/new").thenRespond(.text("new"))
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/old", ["Authorization": "Bearer t"])))
        #expect(probe.values.first?.text == "new")
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Authorization") == "Bearer t")
    }

    @Test(arguments: ["http://api.example.com:443/x", "https://api.example.com:8443/x", "http://api.example.com/x"])
    func aChangeOfSchemeOrPortIsAnotherOrigin(location: String) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.absoluteString == "http://api.example.com/start" }).thenRespond(redirect(307, to: location))
        transport.stub(matching: { $0.url?.absoluteString != "http://api.example.com/start" }).thenRespond(.text("ok"))
        _ = RequestProbe(client(transport).send(request("http://api.example.com/start", ["Authorization": "Bearer t"])))
        let crossed = location != "http://api.example.com/x"
        #expect((transport.requests.last?.value(forHTTPHeaderField: "Authorization") == nil) == crossed)
    }

    @Test func anHTTPSToHTTPRedirectIsRefused() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(redirect(302, to: "http://user:pw@api.example.com/b"))
        // A URL with user-info is refused before it is sent; the Location's is not repeated either.
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/a?token=1")))
        #expect(probe.failure as? RedirectError == .insecureRedirect(from: "https://api.example.com", to: "http://api.example.com"))
        #expect(transport.requests.count == 1)
        #expect(!String(describing: probe.failure!).contains("pw"))
    }

    @Test func seeOtherContinuesAsGETWithoutTheBody() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.post, path: "/orders").thenRespond(redirect(303, to: "/orders/7"))
        transport.stub(.get, path: "/orders/7").thenRespond(.text("order 7"))
        var post = request("https://api.example.com/orders", ["Content-Type": "application/json"], method: "POST")
        post.httpBody = Data("{}".utf8)
        let probe = RequestProbe(client(transport).send(post))
        #expect(probe.values.first?.text == "order 7")
        let followed = try #require(transport.requests.last)
        #expect(followed.httpMethod == "GET")
        #expect(followed.httpBody == nil)
        #expect(followed.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test func temporaryRedirectRepeatsTheMethodAndBody() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.put, path: "/a").thenRespond(redirect(307, to: "/b"))
        transport.stub(.put, path: "/b").thenRespond(.status(204))
        var put = request("https://api.example.com/a", method: "PUT")
        put.httpBody = Data("payload".utf8)
        let probe = RequestProbe(client(transport).send(put))
        #expect(probe.values.first?.statusCode == 204)
        #expect(transport.requests.last?.httpBody == Data("payload".utf8))
    }

    @Test func aRedirectLoopEndsAfterMaxRedirects() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(redirect(302, to: "/again"))
        let probe = RequestProbe(client(transport) { $0.redirectPolicy = RedirectPolicy.follow.limited(to: 3) }
            .send(request("https://api.example.com/start")))
        #expect(probe.failure as? RedirectError == .tooManyRedirects(3))
        #expect(transport.requests.count == 4)
    }

    @Test func neverDeliversThe3xxAndSameOriginDeliversACrossOriginOne() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(redirect(302, to: "https://elsewhere.example.org/b"))
        let never = RequestProbe(client(transport) { $0.redirectPolicy = .never }.send(request("https://api.example.com/a")))
        #expect(never.values.first?.statusCode == 302)
        let same = RequestProbe(client(transport) { $0.redirectPolicy = .sameOrigin }.send(request("https://api.example.com/a")))
        #expect(same.values.first?.statusCode == 302)
        #expect(transport.requests.count == 2)
    }

    @Test(arguments: ["javascript:alert(1)", "ftp://files.example.com/x", "http://"])
    func aLocationThatIsNotAnHTTPURLFails(location: String) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(redirect(302, to: location))
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/a")))
        #expect(probe.failure as? RedirectError == .invalidLocation(status: 302))
    }

    /// Found by the `redirect-location` fuzz target: from a URL without a scheme (one a transport
    /// still answered), Foundation resolves `./HTTPS://host:p` to `HTTPS://host:p`, a URL whose
    /// port is not a number and which `URLComponents` cannot read. It was followed (without the
    /// original fragment, which could not be added); it is refused like any unreadable Location
    /// (CredentialRedirectTests asks the policy). The client now refuses a URL without an http(s)
    /// scheme before it is sent, so through the client nothing is sent at all.
    @Test func aLocationResolvingToAURLWithAnUnreadablePortFails() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(redirect(302, to: "./HTTPS://host.example.com:p"))
        let current = try #require(URL(string: "\u{01}#fragment"))
        let probe = RequestProbe(client(transport).send(URLRequest(url: current)))
        #expect(probe.failure as? URLRequestError == .unsupportedURL(current.redactedForLogging))
        #expect(transport.requests.isEmpty)
    }

    @Test func aRedirectWithoutLocationIsTheResponse() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(301))
        let probe = RequestProbe(client(transport).send(request("https://api.example.com/a")))
        #expect(probe.values.first?.statusCode == 301)
    }

    @Test func theDeadlineCoversEveryHop() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/a").thenRespond(redirect(302, to: "/b").delayed(by: .seconds(3)))
        transport.stub(.get, path: "/b").thenRespond(.text("b").delayed(by: .seconds(3)))
        let probe = RequestProbe(client(transport) { $0.deadline = .after(.seconds(5)) }.send(request("https://api.example.com/a")))
        scheduler.advance(by: .seconds(5))
        #expect(urlErrorCode(probe.failure) == .timedOut)
        scheduler.advance(by: .seconds(5))
        #expect(probe.terminalCount == 1)
    }
}
