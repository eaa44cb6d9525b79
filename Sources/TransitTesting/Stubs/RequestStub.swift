import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// A request matcher and its canned answers, shared by ``StubTransport`` and
/// ``StubURLProtocol``. Add answers with `thenRespond(_:)`.
///
/// Matching requests get the answers in the order they were added; once they are used up, the
/// last one repeats.
///
/// Thread safety: the answers are behind a `Locked`; answers may be added and taken from any
/// thread.
public final class RequestStub<Answer: Sendable>: Sendable {
    let matches: @Sendable (URLRequest) -> Bool
    private let answers = Locked<(list: [@Sendable (URLRequest) -> Answer], next: Int)>(([], 0))

    init(matches: @escaping @Sendable (URLRequest) -> Bool) {
        self.matches = matches
    }

    /// Adds `answer` as the next answer.
    @discardableResult
    public func thenRespond(_ answer: Answer) -> RequestStub {
        thenRespond { _ in answer }
    }

    /// Adds an answer computed from the request (to check a header, echo a body, …).
    @discardableResult
    public func thenRespond(_ answer: @escaping @Sendable (URLRequest) -> Answer) -> RequestStub {
        answers.withLock { $0.list.append(answer) }
        return self
    }

    /// The next answer, or `nil` if none was added.
    func nextAnswer() -> (@Sendable (URLRequest) -> Answer)? {
        answers.withLock { answers in
            guard !answers.list.isEmpty else { return nil }
            let index = min(answers.next, answers.list.count - 1)
            answers.next += 1
            return answers.list[index]
        }
    }
}

/// The stubs of a ``StubTransport`` or a ``StubURLProtocol/Registry``, in the order they were
/// added, and every request they were asked about.
///
/// Thread safety: stubs and requests are behind a `Locked`; matchers run outside it.
final class RequestStubs<Answer: Sendable>: Sendable {
    private let state = Locked<(stubs: [RequestStub<Answer>], requests: [URLRequest])>(([], []))

    init() {}

    /// Adds a stub for the requests `matches` accepts.
    func add(matching matches: @escaping @Sendable (URLRequest) -> Bool) -> RequestStub<Answer> {
        let stub = RequestStub<Answer>(matches: matches)
        state.withLock { $0.stubs.append(stub) }
        return stub
    }

    /// Adds a stub for requests with `method` (any when `nil`) whose URL path is `path` (any when
    /// `nil`), whatever the host and query.
    func add(_ method: HTTPMethod?, path: String?) -> RequestStub<Answer> {
        add { request in
            if let method, (request.httpMethod ?? "GET").uppercased() != method.rawValue { return false }
            if let path, request.url?.path != path { return false }
            return true
        }
    }

    /// Every request recorded so far, in order.
    var requests: [URLRequest] {
        state.withLock { $0.requests }
    }

    /// Forgets the recorded requests; the stubs stay.
    func clearRequests() {
        state.withLock { $0.requests = [] }
    }

    /// Records `request` and returns the first stub that matches it, if any.
    func record(_ request: URLRequest) -> RequestStub<Answer>? {
        let stubs = state.withLock { state -> [RequestStub<Answer>] in
            state.requests.append(request)
            return state.stubs
        }
        return stubs.first { $0.matches(request) }
    }
}
