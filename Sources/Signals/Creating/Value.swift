extension Signal {
    /// A signal that sends `value` and finishes. (For a `Result`, its success is a
    /// `Signal(value:)`, its failure a `Signal(error:)`.)
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
}
