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

    /// Lets through only the values for which `isIncluded` returns `true`.
    @inlinable
    public func filter(_ isIncluded: @escaping @Sendable (Output) -> Bool) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            body(Observer { event in
                if case .value(let value) = event, !isIncluded(value) { return }
                observer.send(event)
            }, token)
        })
    }

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

    /// Transforms every value with a closure that may throw. A thrown error cancels the upstream
    /// and fails the signal with that error.
    @inlinable
    public func tryMap<T>(_ transform: @escaping @Sendable (Output) throws -> T) -> Signal<T, any Error> {
        let body = self.body
        return Signal<T, any Error>(unchecked: { observer, token in
            let upstream = token.makeChild()
            body(Observer { event in
                switch event {
                case .value(let value):
                    let result = Result { try transform(value) }
                    switch result {
                    case .success(let transformed): observer.send(transformed)
                    case .failure(let error):
                        upstream.cancel()
                        observer.fail(error)
                    }
                case .finished: observer.finish()
                case .failed(let error): observer.fail(error)
                }
            }, upstream)
        })
    }

    /// Replaces every value with `()`.
    @inlinable
    public func ignoreValues() -> Signal<Void, Failure> {
        map { _ in () }
    }
}

extension Signal where Failure == Never {
    /// Gives a signal that cannot fail any failure type, so it can be combined with one that can.
    @inlinable
    public func setFailureType<E: Error>(to _: E.Type = E.self) -> Signal<Output, E> {
        mapError { never -> E in }
    }
}
