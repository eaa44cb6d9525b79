extension Signal {
    /// Transforms every value with `transform`. A key path literal reads a property of every
    /// value: `.map(\.data)`; `.map { _ in }` replaces every value with `()`.
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
}
