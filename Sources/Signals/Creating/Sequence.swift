extension Signal {
    /// A signal that sends every element of `sequence`, in order, then finishes.
    ///
    /// Elements are sent synchronously on the subscribing thread; cancelling stops the iteration
    /// before the next element, so an infinite sequence is fine under `first()` or `prefix`.
    @inlinable
    public init<S: Sequence & Sendable>(sequence: S) where S.Element == Output {
        self.init(unchecked: { observer, token in
            var iterator = sequence.makeIterator()
            // Check before pulling, so a cancelled subscription pulls no further element.
            while !token.isCancelled {
                guard let element = iterator.next() else {
                    observer.finish()
                    return
                }
                observer.send(element)
            }
        })
    }
}
