extension Signal {
    /// Replaces a failure with `value`, then finishes.
    @inlinable
    public func replaceError(with value: Output) -> Signal<Output, Never> {
        self.catch { _ in Signal<Output, Never>(value: value) }
    }
}
