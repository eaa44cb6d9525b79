extension Signal {
    /// A signal that sends `value` and finishes.
    @inlinable
    public init(value: Output) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.send(value)
            guard !token.isCancelled else { return }
            observer.finish()
        })
    }

    /// A signal that fails at once with `error`.
    @inlinable
    public init(error: Failure) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.fail(error)
        })
    }

    /// A signal that sends the success value and finishes, or fails with the failure.
    @inlinable
    public init(result: Result<Output, Failure>) {
        switch result {
        case .success(let value): self.init(value: value)
        case .failure(let error): self.init(error: error)
        }
    }
}
