import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitTesting

/// Records every event of one subscription and counts contract violations (events after a
/// terminal event). Named for the request tests to avoid clashing with other helpers.
final class RequestProbe<Output: Sendable, Failure: Error>: Sendable {
    private let state = Locked<(events: [Event<Output, Failure>], violations: Int)>(([], 0))
    private let tokenBox = Locked<CancellationToken?>(nil)

    /// Subscribes to `signal` and keeps the token alive until ``cancel()``.
    init(_ signal: Signal<Output, Failure>) {
        let token = signal.observe(Observer { [self] event in
            state.withLock { state in
                if state.events.last?.isTerminal == true { state.violations += 1 }
                state.events.append(event)
            }
        })
        tokenBox.withLock { $0 = token }
    }

    var events: [Event<Output, Failure>] { state.withLock { $0.events } }
    var values: [Output] { events.compactMap(\.value) }
    var isFinished: Bool { if case .finished? = events.last?.completion { return true } else { return false } }
    var failure: Failure? { if case .failure(let error)? = events.last?.completion { return error } else { return nil } }
    var terminalCount: Int { events.filter(\.isTerminal).count }
    var violations: Int { state.withLock { $0.violations } }

    func cancel() {
        tokenBox.withLock { $0 }?.cancel()
    }
}

/// A value several closures share and change from any thread.
final class SharedValue<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    @discardableResult
    func update<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// A ``RESTAPI`` over a ``StubTransport``.
struct StubbedService: RESTAPI {
    let baseURL: String
    let client: HTTPClient

    init(
        baseURL: String = "https://api.example.com/v1",
        transport: StubTransport,
        defaultHeaders: [String: String] = [:],
        userAgent: String? = "TransitTests/1.0"
    ) {
        self.baseURL = baseURL
        client = HTTPClient(transport: transport) {
            $0.defaultHeaders = defaultHeaders
            $0.userAgent = userAgent
        }
    }
}

extension URLError {
    /// `true` if `error` is a `URLError` with code `code`.
    static func matches(_ error: (any Error)?, _ code: URLError.Code) -> Bool {
        (error as? URLError)?.code == code
    }
}

/// An `HTTPResponse` for `url` with `status` and `headers`, without any transport.
func makeResponse(
    status: Int,
    headers: [String: String] = [:],
    body: String = "",
    url: String = "https://api.example.com/v1/things",
    method: String = "GET"
) -> HTTPResponse {
    let url = URL(string: url)!
    var request = URLRequest(url: url)
    request.httpMethod = method
    return HTTPResponse(
        data: Data(body.utf8),
        head: HTTPResponseHead(HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!),
        request: request
    )
}
