import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitTesting

/// Records the events of one subscription from any thread and counts contract violations
/// (events after a terminal event).
final class AuthRetryLog<Output: Sendable>: Sendable {
    private let state = Locked<(events: [Event<Output, any Error>], violations: Int)>(([], 0))

    var observer: Observer<Output, any Error> {
        Observer { [self] event in
            state.withLock { state in
                if state.events.last?.isTerminal == true { state.violations += 1 }
                state.events.append(event)
            }
        }
    }

    @discardableResult
    func subscribe(to signal: Signal<Output, any Error>) -> CancellationToken {
        signal.observe(observer)
    }

    var events: [Event<Output, any Error>] { state.withLock { $0.events } }
    var values: [Output] { events.compactMap(\.value) }
    var isFinished: Bool { if case .finished? = events.last { return true } else { return false } }
    var failure: (any Error)? { if case .failed(let error)? = events.last { return error } else { return nil } }
    var terminalCount: Int { events.filter(\.isTerminal).count }
    var violations: Int { state.withLock { $0.violations } }
}

/// A mutable value shared between a test and the closures it hands out.
final class AuthRetryBox<Value: Sendable>: Sendable {
    private let value: Locked<Value>
    init(_ value: Value) { self.value = Locked(value) }
    var current: Value { value.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { value.withLock { body(&$0) } }
}

/// An error a test controls.
struct AuthRetryError: Error, Equatable {
    var code = 0
}

/// A service over a stub transport.
struct AuthRetryAPI: RESTAPI {
    let baseURL = "https://api.example.test"
    let client: HTTPClient

    init(transport: StubTransport) {
        client = HTTPClient(transport: transport)
    }
}

extension URLRequest {
    /// The `Authorization` header, for assertions.
    var authorization: String? { value(forHTTPHeaderField: "Authorization") }
}

/// The status code of an HTTP error, or `nil` for any other error.
func statusCode(of error: (any Error)?) -> Int? {
    (error as? any HTTPError)?.statusCode
}

/// A service whose `GET /me` (and `/slow`) answers 200 to `Bearer new` and 401 to anything else,
/// after `answerDelay`, and whose `POST /token` refreshes the token after `refreshDelay`; all
/// on one `TestScheduler`.
struct AuthFixture {
    let scheduler = TestScheduler()
    let transport: StubTransport
    let api: AuthRetryAPI
    let store: TokenStore
    let refreshCount = AuthRetryBox(0)
    let events = AuthRetryBox<[String]>([])

    init(
        tokenAnswer: StubResponse = .json(#"{"accessToken":"new","refreshToken":"r2"}"#),
        answerDelay: Duration = .seconds(1),
        refreshDelay: Duration = .seconds(1),
        meAlwaysUnauthorized: Bool = false
    ) {
        transport = StubTransport(scheduler: scheduler)
        let api = AuthRetryAPI(transport: transport)
        self.api = api
        let answer: @Sendable (URLRequest) -> StubResponse = { request in
            if !meAlwaysUnauthorized, request.authorization == "Bearer new" {
                return StubResponse.text("hello").delayed(by: answerDelay)
            }
            return StubResponse.status(401).delayed(by: answerDelay)
        }
        transport.stub(.get, path: "/me").thenRespond(answer)
        transport.stub(.get, path: "/slow").thenRespond { answer($0).delayed(by: answerDelay * 5) }
        transport.stub(.post, path: "/token").thenRespond(tokenAnswer.delayed(by: refreshDelay))
        let refreshCount = self.refreshCount
        let events = self.events
        store = TokenStore(
            token: AuthToken(accessToken: "old", refreshToken: "r1"),
            onEvent: { event in events.mutate { $0.append(describe(event)) } },
            refresh: { current in
                refreshCount.mutate { $0 += 1 }
                return api.post(endpoint: "token", body: Data((current.refreshToken ?? "").utf8))
                    .catchHTTPErrors()
                    .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
            }
        )
    }

    /// `GET endpoint` with the store's token, retried once with a fresh token on 401.
    func request(_ endpoint: String = "me") -> Signal<HTTPResponse, any Error> {
        api.get(endpoint: endpoint, modifier: store.authorize)
            .catchHTTPErrors()
            .retryWithFreshToken(from: store)
    }

    func requests(to path: String) -> [URLRequest] {
        transport.requests.filter { $0.url?.path == path }
    }
}

/// A short, comparable form of a store event.
func describe(_ event: TokenStore.Event) -> String {
    switch event {
    case .refreshStarted: return "started"
    case .refreshJoined(let waiters): return "joined(\(waiters))"
    case .alreadyRefreshed: return "already"
    case .refreshed(let token, let sharedBy): return "refreshed(\(token.accessToken), \(sharedBy))"
    case .refreshFailed(_, let sharedBy): return "failed(\(sharedBy))"
    }
}
