extension Signal {
    /// Forwards the events of `other` first, then, when it finishes, subscribes to this signal.
    /// The same as `other.append(self)`.
    public func prepend(_ other: Signal<Output, Failure>) -> Signal<Output, Failure> {
        other.append(self)
    }

    /// Sends `values` first, then subscribes to this signal and forwards its events.
    public func prepend(_ values: Output...) -> Signal<Output, Failure> {
        Signal(sequence: values).append(self)
    }
}
