import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A request matcher and its canned answers, shared by ``StubTransport`` and
/// ``StubURLProtocol``. Add answers with ``thenRespond(_:)``.
///
/// Matching requests get the answers in the order they were added; once they are used up, the
/// last one repeats.
///
/// Thread safety: the answers are behind a `Mutex`; answers may be added and taken from any
/// thread.
public final class RequestStub<Answer: Sendable>: Sendable {
    let matches: @Sendable (URLRequest) -> Bool
    private let answers = Mutex<(list: [@Sendable (URLRequest) -> Answer], next: Int)>(([], 0))

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
