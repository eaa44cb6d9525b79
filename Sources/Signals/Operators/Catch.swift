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
        catching { error, _ in handler(error) }
    }

    /// ``catch(_:)`` whose handler also receives the ``SubscriptionContext`` of the
    /// subscription: for Transit's operators, which read it only when a failure comes.
    @inlinable
    package func catching<NewFailure: Error>(
        _ handler: @escaping @Sendable (Failure, SubscriptionContext) -> Signal<Output, NewFailure>
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
                    handler(error, scope.context).body(observer, scope)
                }
            }, scope)
        })
    }
}
