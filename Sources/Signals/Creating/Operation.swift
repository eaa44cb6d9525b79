extension Signal {
    /// A signal that runs `operation` in a new `Task` for every subscription and sends its result.
    ///
    /// Cancelling the subscription cancels the task. A thrown error fails the signal. The
    /// failure type is what the operation throws: `any Error` for a closure that uses `try`,
    /// `Never` for one that cannot throw.
    public init(operation: @escaping @Sendable () async throws(Failure) -> Output) {
        self.init { observer in
            let task = Task {
                do throws(Failure) {
                    let value = try await operation()
                    observer.send(value)
                    observer.finish()
                } catch {
                    observer.fail(error)
                }
            }
            return { task.cancel() }
        }
    }
}
