extension Signal {
    /// Sends at most the first `count` values, then finishes and cancels the upstream.
    ///
    /// If the downstream cancels while it receives the last value, `finished` is not sent.
    @inlinable
    public func prefix(_ count: Int) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            guard count > 0 else {
                if !token.isCancelled { observer.finish() }
                return
            }
            let downstream = CancellationFlag()
            guard token.add(downstream) else { return }
            let upstream = token.makeChild()
            let remaining = Locked(count)
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
                if left > 0 {
                    observer.send(event)
                    return
                }
                upstream.cancel()
                guard !downstream.isCancelled else { return }
                observer.send(event)
                guard !downstream.isCancelled else { return }
                observer.finish()
            }, upstream)
        })
    }
}
