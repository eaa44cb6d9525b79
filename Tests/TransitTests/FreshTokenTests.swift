import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

@Suite struct FreshTokenTests {
    @Test func fiveConcurrent401sCauseExactlyOneRefreshAndFiveSuccessesWithTheNewToken() {
        let f = AuthFixture()
        let logs = (0..<5).map { _ in AuthRetryLog<HTTPResponse>() }
        let tokens = logs.map { $0.subscribe(to: f.request()) }
        #expect(f.requests(to: "/me").count == 5)

        f.scheduler.advance(by: .seconds(1)) // five 401s arrive together
        #expect(f.refreshCount.current == 1)
        #expect(f.requests(to: "/token").count == 1)
        #expect(f.store.isRefreshing)
        #expect(f.requests(to: "/me").count == 5, "nothing is replayed before the refresh ends")

        f.scheduler.advance(by: .seconds(1)) // the refresh ends: five replays
        #expect(f.store.current.accessToken == "new")
        #expect(f.requests(to: "/me").count == 10)
        f.scheduler.advance(by: .seconds(1)) // five 200s

        let sent = f.requests(to: "/me").map(\.authorization)
        #expect(sent == Array(repeating: "Bearer old", count: 5) + Array(repeating: "Bearer new", count: 5))
        #expect(f.requests(to: "/token").count == 1)
        #expect(f.refreshCount.current == 1)
        for log in logs {
            #expect(log.values.map(\.request.authorization) == ["Bearer new"])
            #expect(log.values.map(\.text) == ["hello"])
            #expect(log.isFinished)
            #expect(log.violations == 0)
        }
        #expect(f.events.current == ["started", "joined(2)", "joined(3)", "joined(4)", "joined(5)", "refreshed(new, 5)"])
        withExtendedLifetime(tokens) {}
    }

    @Test func theRefreshSendsTheCurrentRefreshToken() throws {
        let f = AuthFixture()
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: f.request())
        f.scheduler.run()
        let refresh = try #require(f.requests(to: "/token").first)
        #expect(refresh.httpBody == Data("r1".utf8))
        #expect(f.store.current == AuthToken(accessToken: "new", refreshToken: "r2"))
        #expect(log.isFinished)
        withExtendedLifetime(token) {}
    }

    @Test func aRequestSentWithAnOlderTokenReplaysWithoutRefreshing() {
        let f = AuthFixture()
        let fast = AuthRetryLog<HTTPResponse>()
        let slow = AuthRetryLog<HTTPResponse>()
        let tokens = [fast.subscribe(to: f.request("me")), slow.subscribe(to: f.request("slow"))]
        // t=1: /me gets 401 and refreshes; t=2 the token is "new"; t=3 /me succeeds.
        f.scheduler.advance(by: .seconds(3))
        #expect(fast.isFinished)
        #expect(f.refreshCount.current == 1)
        // t=5: /slow, sent at t=0 with "old", gets 401 and replays at once with "new".
        f.scheduler.advance(by: .seconds(2))
        #expect(f.requests(to: "/slow").map(\.authorization) == ["Bearer old", "Bearer new"])
        #expect(f.refreshCount.current == 1, "no second refresh")
        #expect(!f.store.isRefreshing)
        f.scheduler.run()
        #expect(slow.values.map(\.request.authorization) == ["Bearer new"])
        #expect(slow.isFinished)
        #expect(f.requests(to: "/token").count == 1)
        #expect(f.events.current == ["started", "refreshed(new, 1)", "already"])
        withExtendedLifetime(tokens) {}
    }

    @Test func aTokenUpdatedWhileTheRequestWasInFlightIsUsedWithoutRefreshing() {
        let f = AuthFixture()
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: f.request())
        f.store.current = AuthToken(accessToken: "new")
        f.scheduler.run()
        #expect(f.requests(to: "/me").map(\.authorization) == ["Bearer old", "Bearer new"])
        #expect(f.refreshCount.current == 0)
        #expect(log.isFinished)
        withExtendedLifetime(token) {}
    }

    @Test func aFailedRefreshFailsEveryWaiterWithTheRefreshError() throws {
        let f = AuthFixture(tokenAnswer: .status(400, body: Data("invalid_grant".utf8)))
        let logs = (0..<3).map { _ in AuthRetryLog<HTTPResponse>() }
        let tokens = logs.map { $0.subscribe(to: f.request()) }
        f.scheduler.run()
        for log in logs {
            let error = try #require(log.failure as? HTTPClientError)
            #expect(error == .badRequest())
            #expect(error.response?.request.url?.path == "/token", "the refresh's own error")
            #expect(error.response?.data == Data("invalid_grant".utf8))
            #expect(log.terminalCount == 1)
            #expect(log.violations == 0)
        }
        #expect(f.refreshCount.current == 1)
        #expect(f.requests(to: "/me").count == 3, "nothing replayed")
        #expect(f.store.current.accessToken == "old")
        #expect(!f.store.isRefreshing)
        #expect(f.events.current == ["started", "joined(2)", "joined(3)", "failed(3)"])

        // The next 401 starts a new refresh.
        let again = AuthRetryLog<HTTPResponse>()
        let token = again.subscribe(to: f.request())
        f.scheduler.run()
        #expect(f.refreshCount.current == 2)
        #expect(statusCode(of: again.failure) == 400)
        withExtendedLifetime((tokens, token)) {}
    }

    @Test func cancellingOneWaiterLeavesTheRefreshAndTheOthersIntact() {
        let f = AuthFixture()
        let logs = (0..<3).map { _ in AuthRetryLog<HTTPResponse>() }
        let tokens = logs.map { $0.subscribe(to: f.request()) }
        f.scheduler.advance(by: .seconds(1)) // three 401s, one refresh running
        tokens[1].cancel()
        #expect(f.store.isRefreshing)
        f.scheduler.run()
        #expect(f.requests(to: "/token").count == 1)
        #expect(f.store.current.accessToken == "new")
        #expect(logs[0].values.map(\.request.authorization) == ["Bearer new"])
        #expect(logs[2].values.map(\.request.authorization) == ["Bearer new"])
        #expect(logs[0].isFinished && logs[2].isFinished)
        #expect(logs[1].events.isEmpty, "the cancelled request gets nothing")
        #expect(f.requests(to: "/me").count == 5, "three first tries, two replays")
        withExtendedLifetime(tokens) {}
    }

    @Test func cancellingWhileWaitingSendsNothingMoreAndTheStoreStillGetsTheToken() {
        let f = AuthFixture()
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: f.request())
        f.scheduler.advance(by: .milliseconds(1500)) // 401 at t=1, refresh until t=2
        token.cancel()
        f.scheduler.run()
        #expect(f.requests(to: "/me").count == 1, "no replay")
        #expect(f.store.current.accessToken == "new", "the store owns the refresh")
        #expect(!f.store.isRefreshing)
        #expect(log.events.isEmpty)
        #expect(f.scheduler.pendingCount == 0)
    }

    @Test func releasingTheSubscriptionWhileWaitingCancelsIt() {
        let f = AuthFixture()
        let log = AuthRetryLog<HTTPResponse>()
        var token: CancellationToken? = log.subscribe(to: f.request())
        f.scheduler.advance(by: .milliseconds(1500))
        token = nil
        f.scheduler.run()
        #expect(token == nil)
        #expect(f.requests(to: "/me").count == 1)
        #expect(log.events.isEmpty)
    }

    @Test func aSecond401FailsWithThat401() throws {
        let f = AuthFixture(meAlwaysUnauthorized: true)
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: f.request())
        f.scheduler.run()
        let error = try #require(log.failure as? HTTPClientError)
        #expect(error == .unauthorized())
        #expect(error.response?.request.authorization == "Bearer new", "the replay's 401")
        #expect(f.refreshCount.current == 1)
        #expect(f.requests(to: "/me").count == 2)
        #expect(log.terminalCount == 1)
        withExtendedLifetime(token) {}
    }

    @Test func otherErrorsAndSuccessesPassThroughWithoutRefreshing() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/missing").thenRespond(.status(404))
        transport.stub(.get, path: "/down").thenRespond(.failure(URLError(.timedOut)))
        transport.stub(.get, path: "/ok").thenRespond(.text("fine"))
        let api = AuthRetryAPI(transport: transport)
        let refreshCount = AuthRetryBox(0)
        let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in
            refreshCount.mutate { $0 += 1 }
            return Signal(value: AuthToken(accessToken: "new"))
        }
        func run(_ endpoint: String) -> AuthRetryLog<HTTPResponse> {
            let log = AuthRetryLog<HTTPResponse>()
            log.subscribe(to: api.get(endpoint: endpoint, modifier: store.authorize).catchHTTPErrors().retryWithFreshToken(from: store))
            scheduler.run()
            return log
        }
        #expect(statusCode(of: run("missing").failure) == 404)
        #expect((run("down").failure as? TransportError)?.code == .timedOut)
        let ok = run("ok")
        #expect(ok.values.map(\.text) == ["fine"])
        #expect(ok.isFinished)
        #expect(refreshCount.current == 0)
        #expect(transport.requests.count == 3)
    }

    @Test func aSynchronousRefreshReplaysAtOnce() {
        let transport = StubTransport()
        transport.stub(.get, path: "/me").thenRespond { request in
            request.authorization == "Bearer new" ? .text("hi") : .status(401)
        }
        let api = AuthRetryAPI(transport: transport)
        let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in Signal(value: AuthToken(accessToken: "new")) }
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: api.get(endpoint: "me", modifier: store.authorize).catchHTTPErrors().retryWithFreshToken(from: store))
        #expect(log.values.map(\.text) == ["hi"])
        #expect(log.isFinished)
        #expect(transport.requests.map(\.authorization) == ["Bearer old", "Bearer new"])
        withExtendedLifetime(token) {}
    }

    @Test func aFinishedChainReleasesTheStore() {
        let scheduler = TestScheduler()
        weak var weakStore: TokenStore?
        let log = AuthRetryLog<HTTPResponse>()
        do {
            let transport = StubTransport(scheduler: scheduler)
            transport.stub(.get, path: "/me").thenRespond { request in
                (request.authorization == "Bearer new" ? StubResponse.text("hi") : .status(401)).delayed(by: .seconds(1))
            }
            let api = AuthRetryAPI(transport: transport)
            let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in
                Signal { observer in
                    let scheduled = scheduler.schedule(after: .seconds(1)) {
                        observer.send(AuthToken(accessToken: "new"))
                        observer.finish()
                    }
                    return { scheduled.cancel() }
                }
            }
            weakStore = store
            let token = log.subscribe(to: api.get(endpoint: "me", modifier: store.authorize).catchHTTPErrors().retryWithFreshToken(from: store))
            scheduler.run()
            withExtendedLifetime(token) {}
        }
        #expect(log.isFinished)
        #expect(weakStore == nil)
    }

    @Test func aCancelledWaiterReleasesTheStoreOnceTheRefreshEnds() {
        let scheduler = TestScheduler()
        weak var weakStore: TokenStore?
        do {
            let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in
                Signal { observer in
                    let scheduled = scheduler.schedule(after: .seconds(1)) {
                        observer.send(AuthToken(accessToken: "new"))
                        observer.finish()
                    }
                    return { scheduled.cancel() }
                }
            }
            weakStore = store
            let upstream = Signal<HTTPResponse, any Error>(error: HTTPClientError.unauthorized())
            let token = upstream.retryWithFreshToken(from: store).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
            #expect(store.isRefreshing)
            token.cancel()
        }
        #expect(weakStore == nil, "no waiter keeps the store; dropping it cancels its refresh")
        #expect(scheduler.pendingCount == 0)
    }

    @Test func composesWithRateLimitingAndRetryPolicy() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        let answers: [StubResponse] = [.status(401), .status(429, headers: ["Retry-After": "2"]), .status(503), .text("done")]
        let index = AuthRetryBox(0)
        let times = AuthRetryBox<[Duration]>([])
        transport.stub(.get, path: "/me").thenRespond { _ in
            var current = 0
            index.mutate { current = $0; $0 += 1 }
            times.mutate { $0.append(scheduler.now) }
            return answers[min(current, answers.count - 1)]
        }
        let api = AuthRetryAPI(transport: transport)
        let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in Signal(value: AuthToken(accessToken: "new")) }
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: api.get(endpoint: "me", modifier: store.authorize)
            .catchHTTPErrors()
            .retryWithFreshToken(from: store)
            .respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler)
            .retry(RetryPolicy(baseDelay: .seconds(1), jitter: .none), method: .get, scheduler: scheduler))
        scheduler.run()
        #expect(log.values.map(\.text) == ["done"])
        #expect(times.current == [.seconds(0), .seconds(0), .seconds(2), .seconds(3)])
        #expect(transport.requests.map(\.authorization) == ["Bearer old", "Bearer new", "Bearer new", "Bearer new"])
        withExtendedLifetime(token) {}
    }
}
