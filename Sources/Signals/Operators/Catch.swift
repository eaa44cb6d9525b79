extension Signal {
    /// On failure, continues with the signal that `handler` builds from the error.
    ///
    /// Values and normal completion pass through. The handler runs at most once per subscription;
    /// because signals are cold, returning `self` (or any chain that ends in it) subscribes again
    /// and re-runs all of its work.
    @inlinable
    public func `catch`<NewFailure: Error>(
        _ handler: @escaping @Sendable (Failure) -> Signal<Output, NewFailure>
    ) -> Signal<Output, NewFailure> {
        let body = self.body
        return Signal<Output, NewFailure>(unchecked: { observer, token in
            // The closure below holds the scope; a root token is never held (see `isScope`).
            let scope = token.makeScope()
            body(Observer { event in
                switch event {
                case .value(let value): observer.send(value)
                case .finished: observer.finish()
                case .failed(let error):
                    guard !scope.isCancelled else { return }
                    handler(error).body(observer, scope)
                }
            }, scope)
        })
    }

    /// On failure, continues with the signal that `handler` builds from the error; if `handler`
    /// throws, fails with the thrown error.
    @inlinable
    public func tryCatch(
        _ handler: @escaping @Sendable (Failure) throws -> Signal<Output, Failure>
    ) -> Signal<Output, any Error> {
        mapError { $0 as any Error }.catch { error -> Signal<Output, any Error> in
            // The upstream's own failure type is `Failure`; `error` was erased by `mapError` above.
            guard let failure = error as? Failure else { return Signal<Output, any Error>(error: error) }
            do {
                return try handler(failure).eraseError()
            } catch {
                return Signal<Output, any Error>(error: error)
            }
        }
    }

    /// On a failure equal to `error`, continues with the signal `handler` builds; any other
    /// failure passes through unchanged.
    ///
    /// Matching uses the error's `Equatable` conformance, so
    /// `tryCatch(HTTPClientError.tooManyRequests()) { … }` matches any 429, whatever its
    /// Retry-After.
    @inlinable
    public func tryCatch<E: Error & Equatable>(
        _ error: E,
        _ handler: @escaping @Sendable (E) -> Signal<Output, Failure>
    ) -> Signal<Output, Failure> {
        self.catch { failure -> Signal<Output, Failure> in
            if let matched = failure as? E, matched == error {
                return handler(matched)
            }
            return Signal(error: failure)
        }
    }

    /// Replaces a failure with `value`, then finishes.
    @inlinable
    public func replaceError(with value: Output) -> Signal<Output, Never> {
        self.catch { _ in Signal<Output, Never>(value: value) }
    }

    /// Ignores a failure and finishes instead.
    @inlinable
    public func replaceErrorWithEmpty() -> Signal<Output, Never> {
        self.catch { _ in Signal<Output, Never>.empty }
    }

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
