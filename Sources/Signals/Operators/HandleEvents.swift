import Synchronization

extension Signal {
    /// Runs side effects for the life cycle of every subscription, without changing its events.
    ///
    /// - Parameters:
    ///   - receiveSubscription: runs when a subscription starts, before the upstream is subscribed.
    ///   - receiveValue: runs for every value, before it is passed on.
    ///   - receiveCompletion: runs for the terminal event, before it is passed on.
    ///   - receiveCancel: runs once when the subscription is cancelled before its terminal event,
    ///     and never after it; the closure is released when the subscription ends either way.
    @inlinable
    public func handleEvents(
        receiveSubscription: (@Sendable () -> Void)? = nil,
        receiveValue: (@Sendable (Output) -> Void)? = nil,
        receiveCompletion: (@Sendable (Completion<Failure>) -> Void)? = nil,
        receiveCancel: (@Sendable () -> Void)? = nil
    ) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            receiveSubscription?()
            var cancelWatch: CancelWatch?
            if let receiveCancel {
                let watch = CancelWatch(receiveCancel)
                // An already-cancelled token runs `receiveCancel` at once and subscribes nothing.
                guard token.add(watch) else { return }
                cancelWatch = watch
            }
            body(Observer { [cancelWatch] event in
                switch event {
                case .value(let value):
                    receiveValue?(value)
                case .finished, .failed:
                    if let cancelWatch, !cancelWatch.end() { return }
                    if let completion = event.completion { receiveCompletion?(completion) }
                }
                observer.send(event)
            }, token)
        })
    }
}

/// Runs `receiveCancel` if the subscription is cancelled before it ends, at most once.
///
/// Thread safety: the closure is only touched with `lock` held (which is why the class may be
/// `@unchecked Sendable`), and taken out before it runs.
@usableFromInline
final class CancelWatch: Cancellable, @unchecked Sendable {
    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var action: (@Sendable () -> Void)?

    @inlinable
    init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// Takes the closure out (under the lock); the caller releases or runs it after.
    @inlinable
    func take() -> (@Sendable () -> Void)? {
        lock.withLock { () -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
    }

    /// Marks the subscription as ended and releases the closure. Returns `false` if it had
    /// already ended or been cancelled.
    @inlinable
    func end() -> Bool {
        take() != nil
    }

    @usableFromInline
    func cancel() {
        take()?()
    }
}
