import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
@testable import Transit
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

    init(transport: StubTransport, monitors: [any HTTPEventMonitor] = []) {
        client = HTTPClient(transport: transport) { $0.monitors = monitors }
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
        let tokenEvents = TokenEventLog(events)
        let api = AuthRetryAPI(transport: transport, monitors: [tokenEvents])
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
        store = TokenStore(
            token: AuthToken(accessToken: "old", refreshToken: "r1"),
            refresh: { current in
                refreshCount.mutate { $0 += 1 }
                return api.post(endpoint: "token", body: Data((current.refreshToken ?? "").utf8))
                    .catchHTTPErrors()
                    .tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
            }
        )
        tokenEvents.watch(store)
    }

    /// `GET endpoint` with the store's token, retried once with a fresh token on 401.
    func request(_ endpoint: String = "me") -> Signal<HTTPResponse, any Error> {
        api.get(endpoint: endpoint, modifier: store.authorize)
            .catchHTTPErrors()
            .retryWithFreshToken(from: store, scheduler: scheduler)
    }

    func requests(to path: String) -> [URLRequest] {
        transport.requests.filter { $0.url?.path == path }
    }
}

/// A client's monitor that records the refreshes of one `TokenStore` in a short, comparable
/// form: `started`, `joined(n)`, `already`, `refreshed(<token stored>, n)`, `failed(n)`.
final class TokenEventLog: HTTPEventMonitor {
    let events: AuthRetryBox<[String]>
    private let store = AuthRetryBox<TokenStore?>(nil)

    init(_ events: AuthRetryBox<[String]> = AuthRetryBox([])) {
        self.events = events
    }

    /// Names the store whose current token a `refreshed` entry shows.
    func watch(_ store: TokenStore) {
        self.store.mutate { $0 = store }
    }

    func receive(_ event: HTTPEvent) {
        let entry: String? = switch event.kind {
        case .credentialRenewalStarted: "started"
        case .credentialRenewalJoined(let waiters): "joined(\(waiters))"
        case .credentialsAlreadyRenewed: "already"
        case .credentialRenewalSucceeded(let sharedBy): "refreshed(\(store.current?.current.accessToken ?? "?"), \(sharedBy))"
        case .credentialRenewalFailed(_, let sharedBy), .credentialRenewalRefused(_, let sharedBy): "failed(\(sharedBy))"
        default: nil
        }
        if let entry { events.mutate { $0.append(entry) } }
    }
}

/// The monitors of one client whose only monitor is a `TokenEventLog`, as a `TokenStore`'s
/// caller reports to them.
struct TokenEventClient {
    let log: TokenEventLog
    let sink: HTTPEventSink

    init(_ log: TokenEventLog, scheduler: any Scheduler) {
        self.log = log
        sink = HTTPEventSink(monitors: [log], scheduler: scheduler)
    }
}

extension TokenStore {
    /// `freshToken(replacing:scheduler:)` asked by a request of `client`.
    func freshToken(replacing staleAccessToken: String?, from client: TokenEventClient?) -> Signal<AuthToken, any Error> {
        guard let client else { return freshToken(replacing: staleAccessToken) }
        return freshToken(replacing: staleAccessToken, scheduler: client.sink.scheduler, fromRefresh: nil, events: client.sink)
    }
}
