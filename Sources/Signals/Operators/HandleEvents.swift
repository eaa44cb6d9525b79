extension Signal {
    /// Runs side effects for the life cycle of every subscription, without changing its events.
    ///
    /// - Parameters:
    ///   - receiveSubscription: runs when a subscription starts, before the upstream is subscribed.
    ///   - receiveValue: runs for every value, before it is passed on.
    ///   - receiveCompletion: runs for the terminal event, before it is passed on.
    ///   - receiveCancel: runs when the subscription is cancelled before its terminal event.
    public func handleEvents(
        receiveSubscription: (@Sendable () -> Void)? = nil,
        receiveValue: (@Sendable (Output) -> Void)? = nil,
        receiveCompletion: (@Sendable (Completion<Failure>) -> Void)? = nil,
        receiveCancel: (@Sendable () -> Void)? = nil
    ) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            receiveSubscription?()
            let ended = LockedValue(false)
            if let receiveCancel {
                token.onCancel {
                    let wasEnded = ended.withLock { ended -> Bool in
                        defer { ended = true }
                        return ended
                    }
                    if !wasEnded { receiveCancel() }
                }
            }
            body(Observer { event in
                switch event {
                case .value(let value):
                    receiveValue?(value)
                case .finished, .failed:
                    let wasEnded = ended.withLock { ended -> Bool in
                        defer { ended = true }
                        return ended
                    }
                    if wasEnded { return }
                    if let completion = event.completion { receiveCompletion?(completion) }
                }
                observer.send(event)
            }, token)
        })
    }
}
