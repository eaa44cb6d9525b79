/// The failure of ``Signal/firstValue(isolation:)`` when the signal finishes without sending a value.
public struct NoValueError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Creates the error.
    package init() {}

    /// Says that the signal finished without a value.
    public var description: String {
        "The signal finished without sending a value."
    }
}

extension Signal {
    /// Subscribes, waits for the first value, cancels the subscription and returns the value.
    ///
    /// - Throws: the signal's failure if it fails first; ``NoValueError`` if it finishes without a
    ///   value; `CancellationError` if the awaiting task is cancelled (before or while waiting),
    ///   in which case the subscription is cancelled and the call returns at once. A task that is
    ///   already cancelled never subscribes.
    public func firstValue(isolation actor: isolated (any Actor)? = #isolation) async throws -> Output {
        let channel = AsyncSignalChannel(self, policy: .bufferingOldest(1), stopAfterFirstValue: true)
        switch await channel.next(isolation: actor) {
        case .value(let value): return value
        case .finished: throw NoValueError()
        case .failed(let error): throw error
        case .cancelled: throw CancellationError()
        }
    }
}
