import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Defects found from the outside: a refresh that is itself answered 401 through the
/// same store, and a token Foundation would silently drop.
@Suite("TokenStore defects")
struct TokenStoreDefectTests {
    /// A store whose refresh request goes through `retryWithFreshToken(from:)` of the same store
    /// (a common chain shape: one helper builds every authorised request).
    final class StoreBox: Sendable {
        let store = Locked<TokenStore?>(nil)
        var value: TokenStore { store.withLock { $0! } }
    }

    /// With `subscribedLater`, the refresh's chain is subscribed on a later turn of the scheduler
    /// (as a hop to a queue would be): the operator still knows, from the subscription and not
    /// from the thread, that the request is part of the store's refresh, and fails at once.
    @Test(arguments: [false, true])
    func aRefreshAnswered401ThroughItsOwnStoreFailsAtOnceAndTheStoreRecovers(subscribedLater: Bool) {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        let api = AuthRetryAPI(transport: transport)
        transport.stub(.get, path: "/me").thenRespond { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? .text("hello") : .status(401)
        }
        // The refresh token was revoked: the first refresh is answered 401; the next one works.
        transport.stub(.post, path: "/token")
            .thenRespond(.status(401).delayed(by: .seconds(1)))
            .thenRespond(.json(#"{"accessToken":"new"}"#).delayed(by: .seconds(1)))
        let box = StoreBox()
        let store = TokenStore(token: AuthToken(accessToken: "old")) { _ in
            let refresh = api.post(endpoint: "token", modifier: box.value.authorize)
                .catchHTTPErrors()
                .retryWithFreshToken(from: box.value)
                .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
            return subscribedLater ? refresh.subscribe(on: scheduler) : refresh
        }
        box.store.withLock { $0 = store }

        let first = RequestProbe(api.get(endpoint: "me", modifier: store.authorize).catchHTTPErrors().retryWithFreshToken(from: store))
        scheduler.advance(by: .seconds(1))
        #expect(first.terminalCount == 1)
        #expect(first.failure as? TokenStore.RefreshError == .reentrantRefresh)
        #expect(!store.isRefreshing)

        // The store is not stuck: the next 401 refreshes and succeeds.
        let second = RequestProbe(api.get(endpoint: "me", modifier: store.authorize).catchHTTPErrors().retryWithFreshToken(from: store))
        scheduler.advance(by: .seconds(5))
        #expect(second.values.first?.text == "hello")
        #expect(store.current.accessToken == "new")
    }

    @Test(arguments: ["token\n", "to ken", "", "tok\r\nX-Injected: 1"])
    func aTokenFoundationWouldDropFailsTheRequest(token: String) throws {
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("should not be sent"))
        let api = AuthRetryAPI(transport: transport)
        let store = TokenStore(token: AuthToken(accessToken: token)) { _ in Signal(error: URLError(.cancelled)) }
        let probe = RequestProbe(api.get(endpoint: "me", modifier: store.authorize))
        #expect(probe.failure as? URLRequestError == .invalidBearerToken)
        #expect(transport.requests.isEmpty)
        #expect(throws: URLRequestError.invalidBearerToken) { try store.authorize(URLRequest(url: URL(string: "https://a.example")!)) }
    }

    /// The header is made once per token: a token set later is checked and used as it is set.
    @Test func aTokenSetLaterIsCheckedAndUsed() throws {
        let store = TokenStore(token: AuthToken(accessToken: "good")) { _ in Signal(error: URLError(.cancelled)) }
        let request = URLRequest(url: URL(string: "https://a.example")!)
        #expect(try store.authorize(request).value(forHTTPHeaderField: "Authorization") == "Bearer good")
        store.current = AuthToken(accessToken: "bad\n")
        #expect(throws: URLRequestError.invalidBearerToken) { try store.authorize(request) }
        store.current = AuthToken(accessToken: "better")
        #expect(try store.authorize(request).value(forHTTPHeaderField: "Authorization") == "Bearer better")
    }
}

@Suite("TokenStore limits")
struct TokenStoreLimitTests {
    @Test func aRefreshThatHangsFailsAtItsDeadline() {
        let scheduler = TestScheduler()
        let store = TokenStore(
            token: AuthToken(accessToken: "old"),
            limits: TokenStore.RefreshLimits(deadline: .seconds(10))
        ) { _ in .never }
        let probe = RequestProbe(store.freshToken(replacing: "old", scheduler: scheduler))
        scheduler.advance(by: .seconds(9))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? TokenStore.RefreshError == .timedOut)
        #expect(!store.isRefreshing)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func aRefreshLoopIsBounded() {
        let scheduler = TestScheduler()
        let refreshes = SharedValue(0)
        let store = TokenStore(
            token: AuthToken(accessToken: "t0"),
            limits: TokenStore.RefreshLimits(maxRefreshes: 3, window: .seconds(60))
        ) { _ in
            let number = refreshes.update { count -> Int in count += 1; return count }
            return Signal(value: AuthToken(accessToken: "t\(number)"))
        }
        for round in 0..<3 {
            let probe = RequestProbe(store.freshToken(replacing: store.current.accessToken, scheduler: scheduler))
            #expect(probe.values.first?.accessToken == "t\(round + 1)")
        }
        let refused = RequestProbe(store.freshToken(replacing: store.current.accessToken, scheduler: scheduler))
        #expect(refused.failure as? TokenStore.RefreshError == .tooManyRefreshes)
        #expect(refreshes.value == 3)
        scheduler.advance(by: .seconds(60))
        let later = RequestProbe(store.freshToken(replacing: store.current.accessToken, scheduler: scheduler))
        #expect(later.values.first?.accessToken == "t4")
    }
}
