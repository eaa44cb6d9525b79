extension Signal {
    /// Sends the first value that satisfies `predicate` (without one, `first()`: the first value)
    /// and finishes, cancelling the upstream. Finishes without a value if the upstream finishes
    /// first.
    ///
    /// If the downstream cancels while it receives the value, `finished` is not sent.
    @inlinable
    public func first(where predicate: @escaping @Sendable (Output) -> Bool = { _ in true }) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let downstream = CancellationFlag()
            guard token.add(downstream) else { return }
            let upstream = token.makeChild()
            body(Observer { event in
                if case .value(let value) = event {
                    guard predicate(value) else { return }
                    upstream.cancel()
                    guard !downstream.isCancelled else { return }
                    observer.send(value)
                    guard !downstream.isCancelled else { return }
                    observer.finish()
                } else {
                    observer.send(event)
                }
            }, upstream)
        })
    }
}
