import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A refresh is timed by the scheduler of whoever starts it: the client's for its authorizer,
/// the operator's `scheduler:` for `retryWithFreshToken(from:scheduler:)`.
@Suite("TokenStore refresh clock")
struct RefreshClockTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    /// A transport answering 401 to every request, on the test's scheduler.
    private func unauthorized() -> StubTransport {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.status(401))
        return transport
    }

    @Test("the client's scheduler times its authorizer's refresh deadline")
    func theClientsSchedulerTimesTheDeadline() {
        let store = TokenStore(
            token: AuthToken(accessToken: "old"), scope: CredentialScope(hosts: ["api.example.test"]),
            limits: TokenStore.RefreshLimits(deadline: .seconds(10))
        ) { _ in .never }
        let client = HTTPClient(transport: unauthorized()) {
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        let probe = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance()
        #expect(store.isRefreshing)
        scheduler.advance(by: .seconds(9))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? TokenStore.RefreshError == .timedOut)
        #expect(!store.isRefreshing)
    }

    @Test("the client's scheduler times its authorizer's refresh window")
    func theClientsSchedulerTimesTheWindow() {
        let refreshes = SharedValue(0)
        let store = TokenStore(
            token: AuthToken(accessToken: "t0"), scope: CredentialScope(hosts: ["api.example.test"]),
            limits: TokenStore.RefreshLimits(maxRefreshes: 1, window: .seconds(60))
        ) { _ in
            let number = refreshes.update { count -> Int in count += 1; return count }
            return Signal(value: AuthToken(accessToken: "t\(number)"))
        }
        let client = HTTPClient(transport: unauthorized()) {
            $0.scheduler = scheduler
            $0.authorizer = store
        }
        let first = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance()
        #expect(first.values.first?.statusCode == 401, "renewed once, then the 401 is the answer")
        let refused = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance()
        #expect(refused.failure as? TokenStore.RefreshError == .tooManyRefreshes)
        scheduler.advance(by: .seconds(60))
        _ = RequestProbe(client.send(get("https://api.example.test/me")))
        scheduler.advance()
        #expect(refreshes.value == 2, "the window passed in virtual time")
    }

    @Test("the operator's scheduler times a refresh it starts")
    func theOperatorsSchedulerTimesTheDeadline() {
        let store = TokenStore(token: AuthToken(accessToken: "old"), limits: TokenStore.RefreshLimits(deadline: .seconds(10))) { _ in
            .never
        }
        let client = HTTPClient(transport: unauthorized()) { $0.scheduler = scheduler }
        let probe = RequestProbe(
            Signal(tryDeferred: { client.send(try store.authorize(get("https://api.example.test/me"))) })
                .catchHTTPErrors()
                .retryWithFreshToken(from: store, scheduler: scheduler)
        )
        scheduler.advance(by: .seconds(9))
        #expect(store.isRefreshing)
        scheduler.advance(by: .seconds(1))
        #expect(probe.failure as? TokenStore.RefreshError == .timedOut)
        #expect(!store.isRefreshing)
    }
}
