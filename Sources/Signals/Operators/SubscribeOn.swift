extension Signal {
    /// Subscribes to the upstream on `scheduler`, so the upstream's work starts there.
    ///
    /// Events are delivered wherever the upstream sends them (combine with
    /// ``receive(on:)`` to move them). Cancelling before the scheduler runs cancels the pending
    /// subscription: the upstream is never subscribed. Cancelling afterwards cancels the upstream
    /// at once, on the cancelling thread.
    public func subscribe(on scheduler: some Scheduler) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let upstream = token.makeChild()
            guard !upstream.isCancelled else { return }
            let pending = scheduler.schedule(after: .zero) {
                guard !upstream.isCancelled else { return }
                body(observer, upstream)
            }
            upstream.add(pending)
        })
    }
}
