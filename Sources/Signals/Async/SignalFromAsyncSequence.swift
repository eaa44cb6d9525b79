extension Signal {
    /// A signal that iterates `sequence` and sends its elements, then finishes, or fails with the
    /// error the iteration throws. The failure type is the sequence's: `Never` for a sequence
    /// that cannot fail (an `AsyncStream`), `any Error` for an `AsyncThrowingStream`.
    ///
    /// Every subscription iterates the sequence from the start in a `Task` of its own (the signal
    /// is cold, like every signal; a sequence that can only be iterated once, such as an
    /// `AsyncStream`, gives its elements to the first subscription only). Elements are sent in
    /// order, from that task.
    ///
    /// Cancellation goes both ways:
    /// - cancelling the subscription cancels the task, so the sequence sees the cancellation
    ///   (`Task.isCancelled`, an `AsyncStream`'s `onTermination`) and its producer can stop;
    ///   nothing is delivered afterwards, even if the sequence keeps producing;
    /// - a sequence that is cancelled from its own side ends the signal: it finishes if the
    ///   iteration ends, and fails with the `CancellationError` the iteration throws.
    ///
    /// The reverse bridge is `values`; a loop over `Signal(asyncSequence: s).values` that
    /// is cancelled cancels the subscription, and through it the iteration of `s`.
    public init<S: AsyncSequence & Sendable>(asyncSequence sequence: S)
    where S.Element == Output, S.Failure == Failure {
        self.init { observer in
            let task = Task {
                var iterator = sequence.makeAsyncIterator()
                do throws(Failure) {
                    while let element = try await iterator.next(isolation: nil) {
                        observer.send(element)
                    }
                    observer.finish()
                } catch {
                    observer.fail(error)
                }
            }
            return { task.cancel() }
        }
    }
}
