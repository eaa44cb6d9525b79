extension Signal {
    /// Forwards this signal's events, then, when it finishes, subscribes to `other` and forwards
    /// its events. To send values first, append to them: `Signal(sequence: [a, b]).append(signal)`;
    /// to send them last, append them: `signal.append(Signal(sequence: [a, b]))`.
    ///
    /// - `other` is subscribed only after this signal finishes, and only if the subscription was
    ///   not cancelled. A failure of this signal ends the result; `other` is never subscribed.
    /// - Cancelling cancels whichever of the two is running.
    /// - Like every signal, the concatenation is cold: each subscription runs this signal from the
    ///   start, then `other` from the start.
    public func append(_ other: Signal<Output, Failure>) -> Signal<Output, Failure> {
        let first = self.body
        let second = other.body
        return Signal(unchecked: { observer, token in
            let scope = token.makeChild()
            first(Observer { event in
                guard case .finished = event else {
                    observer.send(event)
                    return
                }
                guard !scope.isCancelled else { return }
                second(observer, scope)
            }, scope)
        })
    }
}
