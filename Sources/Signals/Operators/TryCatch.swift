extension Signal {
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
}
