extension Signal {
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
}
