extension Signal {
    /// Lets through only the values for which `isIncluded` returns `true`.
    @inlinable
    public func filter(_ isIncluded: @escaping @Sendable (Output) -> Bool) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            body(Observer { event in
                if case .value(let value) = event, !isIncluded(value) { return }
                observer.send(event)
            }, token)
        })
    }
}
