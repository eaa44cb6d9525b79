extension Signal {
    /// A signal that finishes at once without sending a value.
    @inlinable
    public static var empty: Signal<Output, Failure> {
        Signal(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.finish()
        })
    }

    /// A signal that never sends anything and never finishes.
    @inlinable
    public static var never: Signal<Output, Failure> {
        Signal(unchecked: { _, _ in })
    }
}
