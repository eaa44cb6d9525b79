extension Signal {
    /// A signal that builds a new signal for every subscription, by calling `factory`.
    ///
    /// The factory runs inside the subscription, on every attempt: this is how a retried chain
    /// reads fresh state.
    @inlinable
    public init(deferred factory: @escaping @Sendable () -> Signal<Output, Failure>) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            factory().body(observer, token)
        })
    }
}

extension Signal where Failure == any Error {
    /// A signal that builds a new signal for every subscription with a closure that may throw; a
    /// thrown error fails the signal.
    public init(tryDeferred factory: @escaping @Sendable () throws -> Signal<Output, any Error>) {
        self.init(deferred: {
            do { return try factory() } catch { return Signal(error: error) }
        })
    }
}
