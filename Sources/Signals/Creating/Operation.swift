extension Signal where Failure == any Error {
    /// A signal that runs `operation` in a new `Task` for every subscription and sends its result.
    ///
    /// Cancelling the subscription cancels the task. A thrown error fails the signal.
    public init(operation: @escaping @Sendable () async throws -> Output) {
        self.init { observer in
            let task = Task {
                do {
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

extension Signal where Failure == Never {
    /// A signal that runs `operation` in a new `Task` for every subscription and sends its result.
    ///
    /// Cancelling the subscription cancels the task.
    public init(operation: @escaping @Sendable () async -> Output) {
        self.init { observer in
            let task = Task {
                let value = await operation()
                observer.send(value)
                observer.finish()
            }
            return { task.cancel() }
        }
    }
}
