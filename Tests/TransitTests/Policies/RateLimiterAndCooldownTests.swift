import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("Rate limiter and shared cooldowns")
struct RateLimiterAndCooldownTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    @Test func theDefaultKeyIsOriginAndFirstPathSegment() {
        let key = RequestKey.originAndFirstSegment.key
        #expect(key(get("https://API.example.com/v1/posts?x=1")) == "https://api.example.com:443/v1")
        #expect(key(get("https://api.example.com:443/v1/users")) == "https://api.example.com:443/v1")
        #expect(key(get("https://api.example.com/search/q")) == "https://api.example.com:443/search")
        #expect(key(get("http://api.example.com:8080/")) == "http://api.example.com:8080/")
        #expect(RequestKey.origin.key(get("https://api.example.com/v1/x")) == "https://api.example.com:443")
        #expect(key(get("https://api.example.com//v2//x")) == "https://api.example.com:443/v2")
        #expect(key(get("https://api.example.com/v3")) == "https://api.example.com:443/v3")
        #expect(key(get("https://api.example.com")) == "https://api.example.com:443/")
        #expect(key(get("https://api.example.com/%C3%A9t%C3%A9/x")) == "https://api.example.com:443/été")
        #expect(RequestKey.firstSegment(of: "///") == "")
        #expect(RequestKey.firstSegment(of: "/é/x") == "é")
    }

    /// A client whose rate limiter and cooldowns use the same built-in key computes it once per
    /// request; a key made from a function is never taken for another, even an identical one.
    @Test func onlyTheSameBuiltInKeyIsSharedBetweenPolicies() {
        #expect(RequestKey.originAndFirstSegment.isSame(as: .originAndFirstSegment))
        #expect(RequestKey.origin.isSame(as: .origin))
        #expect(!RequestKey.origin.isSame(as: .originAndFirstSegment))
        let custom = RequestKey { $0.url?.host ?? "" }
        #expect(!custom.isSame(as: custom))
        #expect(!custom.isSame(as: .origin) && !RequestKey.origin.isSame(as: custom))
    }

    @Test func excessRequestsWaitTheirTurnInOrder() {
        let limiter = RateLimiter(requestsPerSecond: 2, burst: 1)
        let order = SharedValue<[Int]>([])
        var tokens: [CancellationToken] = []
        for index in 0..<5 {
            tokens.append(limiter.permit(for: get("https://api.example.com/v1/\(index)"), on: scheduler).sink { _ in
                order.update { $0.append(index) }
            })
        }
        #expect(order.value == [0])
        #expect(limiter.waitingCount(forKey: "https://api.example.com:443/v1") == 4)
        scheduler.advance(by: .milliseconds(499))
        #expect(order.value == [0])
        scheduler.advance(by: .milliseconds(1))
        #expect(order.value == [0, 1])
        scheduler.advance(by: .seconds(1.5))
        #expect(order.value == [0, 1, 2, 3, 4])
        #expect(scheduler.pendingCount == 0)
        withExtendedLifetime(tokens) {}
    }

    @Test func aBurstGoesAtOnceThenRequestsAreSpaced() {
        let limiter = RateLimiter(requestsPerSecond: 10, burst: 3)
        let granted = SharedValue(0)
        let tokens = (0..<5).map { _ in limiter.permit(for: get("https://a.example/x"), on: scheduler).sink { _ in granted.update { $0 += 1 } } }
        #expect(granted.value == 3)
        scheduler.advance(by: .milliseconds(100))
        #expect(granted.value == 4)
        scheduler.advance(by: .milliseconds(100))
        #expect(granted.value == 5)
        withExtendedLifetime(tokens) {}
    }

    @Test func keysAreLimitedSeparately() {
        let limiter = RateLimiter(requestsPerSecond: 1)
        let granted = SharedValue<[String]>([])
        let tokens = ["https://gw.example/v1/a", "https://gw.example/v1/b", "https://gw.example/search/a"].map { url in
            limiter.permit(for: get(url), on: scheduler).sink { _ in granted.update { $0.append(url) } }
        }
        #expect(granted.value == ["https://gw.example/v1/a", "https://gw.example/search/a"])
        withExtendedLifetime(tokens) {}
    }

    @Test func aCancelledWaiterLeavesTheQueueAndGivesUpItsTurn() {
        let limiter = RateLimiter(requestsPerSecond: 1)
        let order = SharedValue<[Int]>([])
        let tokens = (0..<3).map { index in limiter.permit(for: get("https://a.example/x"), on: scheduler).sink { _ in order.update { $0.append(index) } } }
        tokens[1].cancel()
        #expect(limiter.waitingCount(forKey: "https://a.example:443/x") == 1)
        scheduler.advance(by: .seconds(1))
        #expect(order.value == [0, 2])
        tokens[2].cancel()
        #expect(scheduler.pendingCount == 0)
    }

    /// A limiter keyed by origin sees every host its client talks to. A bucket that is full again
    /// with nobody waiting is the one a new key would get, so the limiter forgets it once it keeps
    /// many: memory follows the keys in use, not every key ever seen; a forgotten key still gets
    /// its full burst, and a key with waiters is never forgotten.
    @Test func idleFullBucketsAreForgottenSoManyKeysDoNotGrowWithoutBound() {
        let limiter = RateLimiter(requestsPerSecond: 1)
        let threshold = RateLimiter.minimumSweepThreshold
        // A key that keeps a waiter through every sweep.
        let busy = SharedValue<Int>(0)
        #expect(limiter.acquireImmediately(forKey: "busy", on: scheduler))
        let waiting = limiter.permit(forKey: "busy", on: scheduler).sink { _ in busy.update { $0 += 1 } }
        for index in 0..<(threshold + 500) {
            #expect(limiter.acquireImmediately(forKey: "old-\(index)", on: scheduler))
        }
        // Every bucket is empty: none may be forgotten yet.
        #expect(limiter.bucketCount == threshold + 501)
        scheduler.advance(by: .milliseconds(999))
        #expect(busy.value == 0)
        // Just before the waiter's turn every "old" bucket is almost full; a second later all
        // are full and idle, the "busy" one has handed its token to its waiter.
        scheduler.advance(by: .seconds(2))
        #expect(busy.value == 1)
        #expect(limiter.acquireImmediately(forKey: "busy", on: scheduler))
        let waitingAgain = limiter.permit(forKey: "busy", on: scheduler).sink { _ in busy.update { $0 += 1 } }
        #expect(busy.value == 1)
        for index in 0..<(threshold + 200) {
            #expect(limiter.acquireImmediately(forKey: "new-\(index)", on: scheduler))
        }
        // The sweep forgot the idle "old" buckets and kept the new ones and the busy key.
        #expect(limiter.bucketCount < 2 * threshold)
        #expect(limiter.bucketCount >= threshold + 200)
        #expect(limiter.waitingCount(forKey: "busy") == 1)
        // A forgotten key starts again with its full burst.
        #expect(limiter.acquireImmediately(forKey: "old-0", on: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(busy.value == 2)
        waiting.cancel()
        waitingAgain.cancel()
    }

    @Test func everyAttemptOfAClientWaitsForItsPermit() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.rateLimiter = RateLimiter(requestsPerSecond: 1)
        }
        let probes = (0..<3).map { _ in RequestProbe(client.send(get("https://api.example.com/v1/a"))) }
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 2)
        scheduler.advance(by: .seconds(1))
        #expect(probes.allSatisfy { $0.values.first?.text == "ok" })
    }

    @Test func oneRateLimitedAnswerPausesNewRequestsToItsKey() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/v1/a").thenRespond(.status(429, headers: ["Retry-After": "5"])).thenRespond(.text("a"))
        transport.stub(.get, path: "/v1/b").thenRespond(.text("b"))
        transport.stub(.get, path: "/other/c").thenRespond(.text("c"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns()
        }
        let first = RequestProbe(client.send(get("https://api.example.com/v1/a")))
        #expect(first.values.first?.statusCode == 429)
        let paused = RequestProbe(client.send(get("https://api.example.com/v1/b")))
        let elsewhere = RequestProbe(client.send(get("https://api.example.com/other/c")))
        #expect(elsewhere.values.first?.text == "c")
        #expect(paused.events.isEmpty)
        #expect(transport.requests.count == 2)
        scheduler.advance(by: .seconds(4.9))
        #expect(paused.events.isEmpty)
        scheduler.advance(by: .seconds(0.1))
        #expect(paused.values.first?.text == "b")
    }

    @Test func aSignalBuiltBeforeACooldownStartsRespectsItWhenSubscribed() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/v1/a").thenRespond(.status(429, headers: ["Retry-After": "5"]))
        transport.stub(.get, path: "/v1/b").thenRespond(.text("b"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns()
        }
        // Built (not subscribed) before the 429: the cooldown is looked up at subscription.
        let later = client.send(get("https://api.example.com/v1/b"))
        _ = RequestProbe(client.send(get("https://api.example.com/v1/a")))
        let paused = RequestProbe(later)
        #expect(paused.events.isEmpty)
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(5))
        #expect(paused.values.first?.text == "b")
    }

    @Test func aCooldownLongerThanTheCallerWaitsFailsFastWithTheServersAnswer() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/v1/a").thenRespond(.status(503, headers: ["Retry-After": "120"]))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns(maxWait: .seconds(10))
        }
        _ = RequestProbe(client.send(get("https://api.example.com/v1/a")))
        scheduler.advance(by: .seconds(20))
        let refused = RequestProbe(client.send(get("https://api.example.com/v1/b")))
        let error = try #require(refused.failure as? HTTPServerError)
        guard case .serviceUnavailable(let retryAfter, _) = error else {
            Issue.record("not a 503: \(error)")
            return
        }
        #expect(retryAfter == .seconds(100))
        #expect(transport.requests.count == 1)
    }

    @Test func theCallersOwnRespondToRateLimitingStillWorksWithCooldowns() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(429, headers: ["Retry-After": "2"])).thenRespond(.text("done"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns()
        }
        let probe = RequestProbe(client.send(get("https://api.example.com/v1/a"))
            .catchHTTPErrors()
            .respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler))
        scheduler.advance(by: .seconds(2))
        #expect(probe.values.first?.text == "done")
        #expect(transport.requests.count == 2)
    }
}
