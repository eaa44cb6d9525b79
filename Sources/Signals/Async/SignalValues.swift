extension Signal {
    /// The signal's values as an `AsyncSequence`: `for try await value in signal.values { … }`.
    ///
    /// Each iteration subscribes once, at its first `next()`; a failure is thrown from the loop;
    /// `finished` ends it. Values that arrive while the loop body runs are buffered without bound
    /// (see `values(bufferingPolicy:)`). Cancelling the iterating task cancels the subscription
    /// and makes the pending `next()` throw `CancellationError` at once; leaving the loop early
    /// (`break`, `return`, a thrown error) cancels it too.
    ///
    /// A signal that cannot fail offers a non-throwing `values` instead.
    // Disfavoured so that `values` on a `Failure == Never` signal picks the non-throwing overload:
    // Swift does not rank properties by how constrained their extension is, only methods.
    @_disfavoredOverload
    public var values: some AsyncSequence<Output, any Error> & Sendable {
        ThrowingSignalValues(eraseError(), bufferingPolicy: .unbounded)
    }

    /// The signal's values as an `AsyncSequence`, buffered according to `bufferingPolicy` while
    /// the loop body is busy. Otherwise identical to `values`.
    @_disfavoredOverload
    public func values(bufferingPolicy: SignalBufferingPolicy) -> some AsyncSequence<Output, any Error> & Sendable {
        ThrowingSignalValues(eraseError(), bufferingPolicy: bufferingPolicy)
    }
}

extension Signal where Failure == Never {
    /// The values of a signal that cannot fail, as a non-throwing `AsyncSequence`:
    /// `for await value in signal.values { … }`.
    ///
    /// Each iteration subscribes once, at its first `next()`; `finished` ends the loop. Values
    /// that arrive while the loop body runs are buffered without bound (see
    /// `values(bufferingPolicy:)`). Cancelling the iterating task cancels the subscription and
    /// ends the loop at once (`next()` returns `nil`, as `AsyncStream` does), since the sequence
    /// cannot throw `CancellationError`; check `Task.isCancelled` after the loop to tell the two
    /// endings apart. Leaving the loop early cancels the subscription too.
    public var values: some AsyncSequence<Output, Never> & Sendable {
        SignalValues(self, bufferingPolicy: .unbounded)
    }

    /// The values of a signal that cannot fail, buffered according to `bufferingPolicy` while
    /// the loop body is busy. Otherwise identical to `values`.
    public func values(bufferingPolicy: SignalBufferingPolicy) -> some AsyncSequence<Output, Never> & Sendable {
        SignalValues(self, bufferingPolicy: bufferingPolicy)
    }
}

/// The values of a ``Signal`` that can fail (what `values` returns), as an `AsyncSequence` that throws the signal's
/// failure (or `CancellationError` when the iterating task is cancelled).
///
/// Every iterator is its own subscription (signals are cold), started by its first `next()` and
/// cancelled when the iterator is released, the iterating task is cancelled, or the signal ends.
/// After the sequence ended (finished, failed or cancelled) `next()` returns `nil`.
struct ThrowingSignalValues<Output: Sendable>: AsyncSequence, Sendable {
    private let signal: Signal<Output, any Error>
    private let bufferingPolicy: SignalBufferingPolicy

    init(_ signal: Signal<Output, any Error>, bufferingPolicy: SignalBufferingPolicy) {
        self.signal = signal
        self.bufferingPolicy = bufferingPolicy
    }

    /// Creates an iterator; its first `next()` subscribes to the signal.
    func makeAsyncIterator() -> Iterator {
        Iterator(channel: AsyncSignalChannel(signal, policy: bufferingPolicy))
    }

    /// Reads one subscription's values. Use it from one task at a time.
    struct Iterator: AsyncIteratorProtocol {
        private let channel: AsyncSignalChannel<Output, any Error>

        init(channel: AsyncSignalChannel<Output, any Error>) {
            self.channel = channel
        }

        /// The next value, or `nil` once the signal finished. Throws the signal's failure, or
        /// `CancellationError` if the task is cancelled while (or before) waiting.
        mutating func next() async throws -> Output? {
            try await next(isolation: nil)
        }

        /// The next value, or `nil` once the signal finished, awaited without leaving `actor`.
        /// Throws the signal's failure, or `CancellationError` if the task is cancelled.
        mutating func next(isolation actor: isolated (any Actor)?) async throws -> Output? {
            switch await channel.next(isolation: actor) {
            case .value(let value): return value
            case .finished: return nil
            case .failed(let error): throw error
            case .cancelled: throw CancellationError()
            }
        }
    }
}

/// The values of a ``Signal`` that cannot fail (what `values` returns), as a non-throwing `AsyncSequence`.
///
/// Every iterator is its own subscription (signals are cold), started by its first `next()` and
/// cancelled when the iterator is released, the iterating task is cancelled, or the signal ends.
/// Cancelling the iterating task ends the sequence (`next()` returns `nil`).
struct SignalValues<Output: Sendable>: AsyncSequence, Sendable {
    private let signal: Signal<Output, Never>
    private let bufferingPolicy: SignalBufferingPolicy

    init(_ signal: Signal<Output, Never>, bufferingPolicy: SignalBufferingPolicy) {
        self.signal = signal
        self.bufferingPolicy = bufferingPolicy
    }

    /// Creates an iterator; its first `next()` subscribes to the signal.
    func makeAsyncIterator() -> Iterator {
        Iterator(channel: AsyncSignalChannel(signal, policy: bufferingPolicy))
    }

    /// Reads one subscription's values. Use it from one task at a time.
    struct Iterator: AsyncIteratorProtocol {
        private let channel: AsyncSignalChannel<Output, Never>

        init(channel: AsyncSignalChannel<Output, Never>) {
            self.channel = channel
        }

        /// The next value, or `nil` once the signal finished or the task was cancelled.
        mutating func next() async -> Output? {
            await next(isolation: nil)
        }

        /// The next value, or `nil` once the signal finished or the task was cancelled, awaited
        /// without leaving `actor`.
        mutating func next(isolation actor: isolated (any Actor)?) async -> Output? {
            switch await channel.next(isolation: actor) {
            case .value(let value): return value
            case .finished, .cancelled: return nil
            }
        }
    }
}
