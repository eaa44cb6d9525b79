import Synchronization

/// Something that can be cancelled: a subscription, a scheduled action, a pending wait.
///
/// `cancel()` must be safe to call from any thread, at any time, any number of times.
public protocol Cancellable: AnyObject, Sendable {
    /// Stops the work. Calling it again does nothing.
    func cancel()
}

/// A `Cancellable` that runs a closure the first time it is cancelled, and never again.
///
/// Thread safety: `action` is only touched with `lock` held, which is why the class may be
/// `@unchecked Sendable`; it is taken out before it runs.
package final class ActionCancellable: Cancellable, @unchecked Sendable {
    private let lock = Lock()
    @exclusivity(unchecked) private var action: (@Sendable () -> Void)?

    /// Creates a cancellable that runs `action` once, on the first call to ``cancel()``.
    package init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// `true` once ``cancel()`` has been called.
    package var isCancelled: Bool {
        lock.withLock { action == nil }
    }

    package func cancel() {
        var taken: (@Sendable () -> Void)?
        lock.withLock { swap(&taken, &action) }
        taken?()
    }
}
