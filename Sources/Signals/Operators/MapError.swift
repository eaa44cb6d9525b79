extension Signal {
    /// Transforms the failure with `transform`.
    @inlinable
    public func mapError<E: Error>(_ transform: @escaping @Sendable (Failure) -> E) -> Signal<Output, E> {
        let body = self.body
        return Signal<Output, E>(unchecked: { observer, token in
            body(Observer { event in
                switch event {
                case .value(let value): observer.send(value)
                case .finished: observer.finish()
                case .failed(let error): observer.fail(transform(error))
                }
            }, token)
        })
    }

    /// Erases the failure type to `any Error`.
    @inlinable
    public func eraseError() -> Signal<Output, any Error> {
        mapError { $0 }
    }
}

extension Signal where Failure == Never {
    /// Gives a signal that cannot fail any failure type, so it can be combined with one that can.
    @inlinable
    public func setFailureType<E: Error>(to _: E.Type = E.self) -> Signal<Output, E> {
        mapError { never -> E in }
    }
}
