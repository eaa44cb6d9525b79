extension Signal {
    /// Transforms every value with `transform`.
    @inlinable
    public func map<T>(_ transform: @escaping @Sendable (Output) -> T) -> Signal<T, Failure> {
        let body = self.body
        return Signal<T, Failure>(unchecked: { observer, token in
            body(Observer { event in
                switch event {
                case .value(let value): observer.send(transform(value))
                case .finished: observer.finish()
                case .failed(let error): observer.fail(error)
                }
            }, token)
        })
    }

    /// Reads the property at `keyPath` of every value: `.map(\.data)`.
    @inlinable
    public func map<T>(_ keyPath: KeyPath<Output, T> & Sendable) -> Signal<T, Failure> {
        map { $0[keyPath: keyPath] }
    }

    /// Replaces every value with `()`.
    @inlinable
    public func ignoreValues() -> Signal<Void, Failure> {
        map { _ in () }
    }
}
