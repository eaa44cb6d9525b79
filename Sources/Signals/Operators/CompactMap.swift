extension Signal {
    /// Transforms every value with `transform` and drops the `nil` results.
    @inlinable
    public func compactMap<T>(_ transform: @escaping @Sendable (Output) -> T?) -> Signal<T, Failure> {
        let body = self.body
        return Signal<T, Failure>(unchecked: { observer, token in
            body(Observer { event in
                switch event {
                case .value(let value):
                    if let transformed = transform(value) { observer.send(transformed) }
                case .finished: observer.finish()
                case .failed(let error): observer.fail(error)
                }
            }, token)
        })
    }
}
