import Synchronization

extension Signal {
    /// Collects every value and sends them as one array when the upstream finishes.
    ///
    /// A failure is passed on and the collected values are dropped. If the downstream cancels
    /// while it receives the array, `finished` is not sent.
    @inlinable
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
/// Thread safety: the fields below `lock` are only touched with it held, which is why the class
/// may be `@unchecked Sendable`.
@usableFromInline
final class CollectBuffer<Output: Sendable>: Cancellable, @unchecked Sendable {
    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var values: [Output] = []
    @usableFromInline
    @exclusivity(unchecked) var cancelled = false

    @inlinable
    init() {}

    @inlinable
    func append(_ value: Output) {
        lock.withLock { if !cancelled { values.append(value) } }
    }

    /// Takes the values out, or returns `nil` if the subscription was cancelled.
    @inlinable
    func take() -> [Output]? {
        lock.withLock { () -> [Output]? in
            guard !cancelled else { return nil }
            defer { values = [] }
            return values
        }
    }

    @inlinable
    var isCancelled: Bool {
        lock.withLock { cancelled }
    }

    @usableFromInline
    func cancel() {
        // The values are released after the lock: their deinit may run user code.
        let dropped = lock.withLock { () -> [Output] in
            cancelled = true
            defer { values = [] }
            return values
        }
        _ = dropped
    }
}
