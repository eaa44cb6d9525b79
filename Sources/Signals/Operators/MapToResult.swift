extension Signal {
    /// Wraps every value in `.success` and a failure in `.failure` (followed by `finished`), so
    /// the result cannot fail. If the downstream cancels while it receives the `.failure`,
    /// `finished` is not sent.
    @inlinable
    public func mapToResult() -> Signal<Result<Output, Failure>, Never> {
        let body = self.body
        return Signal<Result<Output, Failure>, Never>(unchecked: { observer, token in
            let downstream = CancellationFlag()
            guard token.add(downstream) else { return }
            body(Observer { event in
                switch event {
                case .value(let value): observer.send(.success(value))
                case .finished: observer.finish()
                case .failed(let error):
                    observer.send(.failure(error))
                    guard !downstream.isCancelled else { return }
                    observer.finish()
                }
            }, token)
        })
    }
}
