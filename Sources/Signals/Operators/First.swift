extension Signal {
    /// Sends the first value and finishes, cancelling the upstream. Finishes without a value if
    /// the upstream finishes first.
    public func first() -> Signal<Output, Failure> {
        first { _ in true }
    }

    /// Sends the first value that satisfies `predicate` and finishes, cancelling the upstream.
    public func first(where predicate: @escaping @Sendable (Output) -> Bool) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            let upstream = token.makeChild()
            body(Observer { event in
                if case .value(let value) = event {
                    guard predicate(value) else { return }
                    upstream.cancel()
                    observer.send(value)
                    observer.finish()
                } else {
                    observer.send(event)
                }
            }, upstream)
        })
    }

    /// Sends at most the first `count` values, then finishes and cancels the upstream.
    public func prefix(_ count: Int) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            guard count > 0 else {
                if !token.isCancelled { observer.finish() }
                return
            }
            let upstream = token.makeChild()
            let remaining = LockedValue(count)
            body(Observer { event in
                guard case .value = event else {
                    observer.send(event)
                    return
                }
                let left = remaining.withLock { remaining -> Int in
                    remaining -= 1
                    return remaining
                }
                guard left >= 0 else { return }
                if left == 0 { upstream.cancel() }
                observer.send(event)
                if left == 0 { observer.finish() }
            }, upstream)
        })
    }
}
