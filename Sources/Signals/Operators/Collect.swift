import Synchronization

extension Signal {
    /// Collects every value and sends them as one array when the upstream finishes.
    ///
    /// A failure is passed on and the collected values are dropped. If the downstream cancels
    /// while it receives the array, `finished` is not sent.
    public func collect() -> Signal<[Output], Failure> {
        let body = self.body
        return Signal<[Output], Failure>(unchecked: { observer, token in
            let buffer = CollectBuffer<Output>()
            guard token.add(buffer) else { return }
            body(Observer { event in
                switch event {
                case .value(let value):
                    buffer.append(value)
                case .finished:
                    guard let values = buffer.take() else { return }
                    observer.send(values)
                    guard !buffer.isCancelled else { return }
                    observer.finish()
                case .failed(let error):
                    _ = buffer.take()
                    observer.fail(error)
                }
            }, token)
        })
    }
}

/// The values `collect` has gathered so far. Cancelling drops them.
///
/// Thread safety: all state is behind one `Mutex`.
private final class CollectBuffer<Output: Sendable>: Cancellable {
    private let state = Mutex<(values: [Output], cancelled: Bool)>(([], false))

    func append(_ value: Output) {
        state.withLock { if !$0.cancelled { $0.values.append(value) } }
    }

    /// Takes the values out, or returns `nil` if the subscription was cancelled.
    func take() -> [Output]? {
        state.withLock { state -> [Output]? in
            guard !state.cancelled else { return nil }
            defer { state.values = [] }
            return state.values
        }
    }

    var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }

    func cancel() {
        let dropped = state.withLock { state -> [Output] in
            state.cancelled = true
            defer { state.values = [] }
            return state.values
        }
        // The values are released here, outside the lock: their deinit may run user code.
        _ = dropped
    }
}
