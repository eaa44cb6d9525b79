import Synchronization

/// Something that can be cancelled: a subscription, a scheduled action, a pending wait.
///
/// `cancel()` must be safe to call from any thread, at any time, any number of times.
public protocol Cancellable: AnyObject, Sendable {
    /// Stops the work. Calling it again does nothing.
    func cancel()
}

/// A ``Cancellable`` that runs a closure the first time it is cancelled, and never again.
public final class ActionCancellable: Cancellable {
    private let action: Mutex<(@Sendable () -> Void)?>

    /// Creates a cancellable that runs `action` once, on the first call to ``cancel()``.
    public init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    /// `true` once ``cancel()`` has been called.
    public var isCancelled: Bool {
        action.withLock { $0 == nil }
    }

    public func cancel() {
        let action = self.action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }
}
