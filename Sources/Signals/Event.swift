/// One thing a ``Signal`` tells its observer: a value, or the single terminal event that ends it.
///
/// A subscription delivers any number of `.value` events followed by at most one terminal event
/// (`.finished` or `.failed`). Nothing is delivered after a terminal event or after cancellation.
public enum Event<Output: Sendable, Failure: Error>: Sendable {
    /// A value produced by the signal.
    case value(Output)
    /// The signal ended normally. No further events follow.
    case finished
    /// The signal ended with an error. No further events follow.
    case failed(Failure)

    /// `true` for `.finished` and `.failed`.
    @inlinable
    package var isTerminal: Bool {
        if case .value = self { return false }
        return true
    }

    /// The value, if this is a `.value` event.
    @inlinable
    package var value: Output? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// The terminal event for `completion`: `.finished`, or `.failed` with its error.
    @inlinable
    public init(_ completion: Completion<Failure>) {
        switch completion {
        case .finished: self = .finished
        case .failure(let error): self = .failed(error)
        }
    }

    /// The terminal event as a ``Completion``, or `nil` for a value.
    @inlinable
    package var completion: Completion<Failure>? {
        switch self {
        case .value: return nil
        case .finished: return .finished
        case .failed(let error): return .failure(error)
        }
    }
}

/// How a signal ended: normally, or with an error.
public enum Completion<Failure: Error>: Sendable {
    /// The signal finished normally.
    case finished
    /// The signal failed with an error.
    case failure(Failure)
}

extension Completion: Equatable where Failure: Equatable {}
extension Event: Equatable where Output: Equatable, Failure: Equatable {}
