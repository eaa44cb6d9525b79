import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit

@Suite struct TokenStoreTests {
    /// A store whose refresh sends `AuthToken(accessToken: next)` after one second on `scheduler`
    /// (or fails with `failure`), counting refreshes.
    private func makeStore(
        scheduler: TestScheduler,
        next: String = "new",
        failure: AuthRetryError? = nil,
        count: AuthRetryBox<Int>
    ) -> TokenStore {
        TokenStore(
            token: AuthToken(accessToken: "old", refreshToken: "r1"),
            refresh: { _ in
                count.mutate { $0 += 1 }
                return Signal { observer in
                    let scheduled = scheduler.schedule(after: .seconds(1)) {
                        if let failure {
                            observer.fail(failure)
                        } else {
                            observer.send(AuthToken(accessToken: next))
                            observer.finish()
                        }
                    }
                    return { scheduled.cancel() }
                }
            }
        )
    }

    /// A client whose monitor records `store`'s refreshes into `events`.
    private func monitoredClient(recording events: AuthRetryBox<[String]>, of store: TokenStore, scheduler: TestScheduler) -> TokenEventClient {
        let log = TokenEventLog(events)
        log.watch(store)
        return TokenEventClient(log, scheduler: scheduler)
    }

    @Test func authorizeSetsTheCurrentBearerTokenEachTimeItRuns() throws {
        let store = TokenStore(token: AuthToken(accessToken: "a")) { _ in .never }
        let request = URLRequest(url: URL(string: "https://api.example.test/me")!)
        #expect(try store.authorize(request).authorization == "Bearer a")
        store.current = AuthToken(accessToken: "b")
        #expect(try store.authorize(store.authorize(request)).authorization == "Bearer b")
        #expect(request.authorization == nil, "the modifier does not mutate its input")
    }

    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("  Bearer   abc ", "abc"),
        ("Basic dXNlcg==", nil), ("Bearer", nil), ("Bearer ", nil), ("", nil),
    ] as [(String, String?)])
    func bearerTokenIsReadFromTheAuthorizationHeader(header: String, expected: String?) {
        var request = URLRequest(url: URL(string: "https://api.example.test/me")!)
        request.setValue(header, forHTTPHeaderField: "Authorization")
        #expect(TokenStore.bearerToken(in: request) == expected)
    }

    @Test func bearerTokenOfARequestWithoutTheHeaderIsNil() {
        #expect(TokenStore.bearerToken(in: URLRequest(url: URL(string: "https://api.example.test")!)) == nil)
        #expect(TokenStore.bearerToken(in: nil) == nil)
    }

    @Test func aStaleTokenGetsTheCurrentOneAtOnceWithoutRefreshing() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let events = AuthRetryBox<[String]>([])
        let store = makeStore(scheduler: scheduler, count: count)
        let client = monitoredClient(recording: events, of: store, scheduler: scheduler)
        let log = AuthRetryLog<AuthToken>()
        let token = log.subscribe(to: store.freshToken(replacing: "older-than-old", from: client))
        #expect(log.values.map(\.accessToken) == ["old"])
        #expect(log.isFinished)
        #expect(count.current == 0)
        #expect(!store.isRefreshing)
        #expect(events.current == ["already"])
        withExtendedLifetime(token) {}
    }

    @Test func anOlderTokenJoinsARunningRefreshRatherThanGettingTheTokenBeingReplaced() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let events = AuthRetryBox<[String]>([])
        let store = makeStore(scheduler: scheduler, count: count)
        let client = monitoredClient(recording: events, of: store, scheduler: scheduler)
        let first = AuthRetryLog<AuthToken>()
        let older = AuthRetryLog<AuthToken>()
        let tokens = [
            first.subscribe(to: store.freshToken(replacing: "old", from: client)),
            older.subscribe(to: store.freshToken(replacing: "older-than-old", from: client)),
        ]
        #expect(older.events.isEmpty, "\"old\" is being replaced: wait for its successor")
        scheduler.run()
        #expect(older.values.map(\.accessToken) == ["new"])
        #expect(count.current == 1)
        #expect(events.current == ["started", "joined(2)", "refreshed(new, 2)"])
        withExtendedLifetime(tokens) {}
    }

    @Test func theCurrentTokenOrNoTokenJoinsOneRefresh() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let events = AuthRetryBox<[String]>([])
        let store = makeStore(scheduler: scheduler, count: count)
        let client = monitoredClient(recording: events, of: store, scheduler: scheduler)
        let logs = (0..<3).map { _ in AuthRetryLog<AuthToken>() }
        let tokens = [
            logs[0].subscribe(to: store.freshToken(replacing: "old", from: client)),
            logs[1].subscribe(to: store.freshToken(replacing: nil, from: client)),
            logs[2].subscribe(to: store.freshToken(replacing: "old", from: client)),
        ]
        #expect(count.current == 1)
        #expect(store.isRefreshing)
        #expect(logs.allSatisfy { $0.events.isEmpty })
        scheduler.advance(by: .seconds(1))
        for log in logs {
            #expect(log.values.map(\.accessToken) == ["new"])
            #expect(log.isFinished)
        }
        #expect(store.current.accessToken == "new")
        #expect(!store.isRefreshing)
        #expect(events.current == ["started", "joined(2)", "joined(3)", "refreshed(new, 3)"])
        withExtendedLifetime(tokens) {}
    }

    @Test func theRefreshClosureReceivesTheCurrentCredentials() {
        let received = AuthRetryBox<AuthToken?>(nil)
        let store = TokenStore(token: AuthToken(accessToken: "a", refreshToken: "r")) { current in
            received.mutate { $0 = current }
            return Signal(value: AuthToken(accessToken: "b"))
        }
        let log = AuthRetryLog<AuthToken>()
        let token = log.subscribe(to: store.freshToken(replacing: "a"))
        #expect(received.current == AuthToken(accessToken: "a", refreshToken: "r"))
        #expect(log.values.map(\.accessToken) == ["b"])
        withExtendedLifetime(token) {}
    }

    @Test func aFailedRefreshFailsEveryWaiterAndKeepsTheOldToken() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let store = makeStore(scheduler: scheduler, failure: AuthRetryError(code: 7), count: count)
        let logs = (0..<4).map { _ in AuthRetryLog<AuthToken>() }
        let tokens = logs.map { $0.subscribe(to: store.freshToken(replacing: "old")) }
        scheduler.run()
        for log in logs {
            #expect(log.failure as? AuthRetryError == AuthRetryError(code: 7))
            #expect(log.terminalCount == 1)
        }
        #expect(store.current.accessToken == "old")
        #expect(!store.isRefreshing)
        #expect(count.current == 1)
        withExtendedLifetime(tokens) {}
    }

    @Test func aRefreshThatFinishesWithoutATokenFailsWithNoToken() {
        let store = TokenStore(token: AuthToken(accessToken: "a")) { _ in .empty }
        let log = AuthRetryLog<AuthToken>()
        let token = log.subscribe(to: store.freshToken(replacing: "a"))
        #expect(log.failure is TokenStore.RefreshError)
        #expect(store.current.accessToken == "a")
        #expect(!store.isRefreshing)
        withExtendedLifetime(token) {}
    }

    @Test func aRefreshThatSendsSeveralTokensKeepsTheFirstAndIsCancelled() {
        let cancelled = AuthRetryBox(false)
        let store = TokenStore(token: AuthToken(accessToken: "a")) { _ in
            Signal { observer in
                observer.send(AuthToken(accessToken: "b"))
                observer.send(AuthToken(accessToken: "c"))
                return { cancelled.mutate { $0 = true } }
            }
        }
        let log = AuthRetryLog<AuthToken>()
        let token = log.subscribe(to: store.freshToken(replacing: "a"))
        #expect(log.values.map(\.accessToken) == ["b"])
        #expect(log.isFinished)
        #expect(store.current.accessToken == "b")
        #expect(cancelled.current, "the refresh subscription ends after its first token")
        withExtendedLifetime(token) {}
    }

    @Test func aCancelledWaiterGetsNothingAndTheOthersStillGetTheToken() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let store = makeStore(scheduler: scheduler, count: count)
        let kept = AuthRetryLog<AuthToken>()
        let dropped = AuthRetryLog<AuthToken>()
        let keptToken = kept.subscribe(to: store.freshToken(replacing: "old"))
        let droppedToken = dropped.subscribe(to: store.freshToken(replacing: "old"))
        droppedToken.cancel()
        scheduler.run()
        #expect(kept.values.map(\.accessToken) == ["new"])
        #expect(dropped.events.isEmpty)
        #expect(count.current == 1)
        withExtendedLifetime(keptToken) {}
    }

    @Test func whenEveryWaiterIsCancelledTheRefreshStillCompletesAndIsStored() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let store = makeStore(scheduler: scheduler, count: count)
        let log = AuthRetryLog<AuthToken>()
        log.subscribe(to: store.freshToken(replacing: "old")).cancel()
        #expect(scheduler.pendingCount == 1, "the refresh is still running")
        scheduler.run()
        #expect(store.current.accessToken == "new")
        #expect(!store.isRefreshing)
        #expect(log.events.isEmpty)
        // A request that was sent with "old" now replays without a refresh.
        let late = AuthRetryLog<AuthToken>()
        let token = late.subscribe(to: store.freshToken(replacing: "old"))
        #expect(late.values.map(\.accessToken) == ["new"])
        #expect(count.current == 1)
        withExtendedLifetime(token) {}
    }

    @Test func manyThreadsAskingTogetherShareOneRefresh() {
        let scheduler = TestScheduler()
        let count = AuthRetryBox(0)
        let store = makeStore(scheduler: scheduler, count: count)
        let logs = (0..<64).map { _ in AuthRetryLog<AuthToken>() }
        let tokens = AuthRetryBox<[CancellationToken]>([])
        DispatchQueue.concurrentPerform(iterations: logs.count) { index in
            let token = logs[index].subscribe(to: store.freshToken(replacing: "old"))
            tokens.mutate { $0.append(token) }
            if index % 8 == 0 { token.cancel() }
        }
        scheduler.run()
        #expect(count.current == 1)
        for (index, log) in logs.enumerated() {
            if index % 8 == 0 {
                #expect(log.events.isEmpty)
            } else {
                #expect(log.values.map(\.accessToken) == ["new"])
                #expect(log.isFinished)
            }
            #expect(log.violations == 0)
        }
        #expect(tokens.current.count == 64)
    }

    @Test func aStoreIsReleasedAfterItsRefreshEnds() {
        let scheduler = TestScheduler()
        weak var weakStore: TokenStore?
        let log = AuthRetryLog<AuthToken>()
        do {
            let store = makeStore(scheduler: scheduler, count: AuthRetryBox(0))
            weakStore = store
            let token = log.subscribe(to: store.freshToken(replacing: "old"))
            scheduler.run()
            withExtendedLifetime(token) {}
        }
        #expect(log.isFinished)
        #expect(weakStore == nil)
    }

    @Test func authTokenDecodesFromJSONAndReportsExpiry() throws {
        let json = #"{"accessToken":"a","refreshToken":"r","expiresAt":100}"#
        let token = try JSONDecoder().decode(AuthToken.self, from: Data(json.utf8))
        #expect(token == AuthToken(accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSinceReferenceDate: 100)))
        #expect(token.isExpired(at: Date(timeIntervalSinceReferenceDate: 100)))
        #expect(!token.isExpired(at: Date(timeIntervalSinceReferenceDate: 99)))
        #expect(!AuthToken(accessToken: "a").isExpired(at: .distantFuture))
    }
}
