extension Signal {
    /// A signal that sends `value` and finishes.
    @inlinable
    public init(value: Output) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.send(value)
            guard !token.isCancelled else { return }
            observer.finish()
        })
    }

    /// A signal that fails at once with `error`.
    @inlinable
    public init(error: Failure) {
        self.init(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.fail(error)
        })
    }

    /// A signal that sends the success value and finishes, or fails with the failure.
    @inlinable
    public init(result: Result<Output, Failure>) {
        switch result {
        case .success(let value): self.init(value: value)
        case .failure(let error): self.init(error: error)
        }
    }

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

    /// A signal that finishes at once without sending a value.
    @inlinable
    public static var empty: Signal<Output, Failure> {
        Signal(unchecked: { observer, token in
            guard !token.isCancelled else { return }
            observer.finish()
        })
    }

    /// A signal that never sends anything and never finishes.
    @inlinable
    public static var never: Signal<Output, Failure> {
        Signal(unchecked: { _, _ in })
    }
}

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

    /// A signal that builds a new signal for every subscription with a closure that may throw; a
    /// thrown error fails the signal.
    public init(tryDeferred factory: @escaping @Sendable () throws -> Signal<Output, any Error>) {
        self.init(deferred: {
            do { return try factory() } catch { return Signal(error: error) }
        })
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
