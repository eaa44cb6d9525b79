extension Signal {
    /// A signal that builds a new signal for every subscription, by calling `factory`.
    ///
    /// The factory runs inside the subscription, on every attempt: this is how a retried chain
    /// reads fresh state.
    @inlinable
    public init(deferred factory: @escaping @Sendable () -> Signal<Output, Failure>) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            factory().body(observer, token)
        })
    }

    /// A signal that builds a new signal for every subscription from the
    /// ``SubscriptionContext`` the subscription carries, and subscribes it in the same
    /// subscription (no stage of its own).
    @inlinable
    public init(deferredWithContext factory: @escaping @Sendable (SubscriptionContext) -> Signal<Output, Failure>) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            factory(token.context).body(observer, token)
        })
    }

    /// This signal, subscribed with the context `update` makes of the subscription's: what this
    /// signal's sources read (see ``SubscriptionContext``). When `update` returns the context it
    /// was given, the upstream is subscribed in the same token; otherwise in a child token that
    /// carries the new context.
    @inlinable
    public func withContext(_ update: @escaping @Sendable (SubscriptionContext) -> SubscriptionContext) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let context = update(token.context)
            guard context.head !== token.context.head else { return body(observer, token) }
            let child = CancellationToken(isScope: true, context: context)
            guard token.add(child) else { return }
            body(observer, child)
        })
    }
}

extension Signal where Failure == any Error {
    /// A signal that builds a new signal for every subscription with a closure that may throw; a
    /// thrown error fails the signal.
    @inlinable
    public init(tryDeferred factory: @escaping @Sendable () throws -> Signal<Output, any Error>) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            let signal: Signal
            do { signal = try factory() } catch { signal = Signal(error: error) }
            signal.body(observer, token)
        })
    }
}
