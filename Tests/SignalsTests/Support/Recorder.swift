import Signals

/// Records every event a subscription delivers, from any thread, and checks the event contract
/// as it goes: no event after a terminal event.
final class Recorder<Output: Sendable, Failure: Error>: Sendable {
    private let state = Locked<(events: [Event<Output, Failure>], violations: Int)>(([], 0))

    init() {}

    var observer: Observer<Output, Failure> {
        Observer { [self] event in
            state.withLock { state in
                if state.events.last?.isTerminal == true { state.violations += 1 }
                state.events.append(event)
            }
        }
    }

    @discardableResult
    func subscribe(to signal: Signal<Output, Failure>) -> CancellationToken {
        signal.observe(observer)
    }

    var events: [Event<Output, Failure>] { state.withLock { $0.events } }
    var values: [Output] { events.compactMap(\.value) }
    var completion: Completion<Failure>? { events.last?.completion }
    var isFinished: Bool { if case .finished? = completion { return true } else { return false } }
    var failure: Failure? { if case .failure(let error)? = completion { return error } else { return nil } }
    var terminalCount: Int { events.filter(\.isTerminal).count }
    /// Events delivered after a terminal event. Must always be zero.
    var violations: Int { state.withLock { $0.violations } }
}

struct TestError: Error, Equatable, Sendable {
    var code: Int = 0
}

/// Counts something from any thread.
final class Counter: Sendable {
    private let value = Locked(0)
    init() {}
    @discardableResult
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}
