/// Receives the events of one subscription.
///
/// An observer is a cheap value that wraps the receiving closure. A producer written with
/// ``Signal/init(_:)`` is handed an observer that is safe to call from any thread, any number of
/// times: it serialises concurrent calls, delivers at most one terminal event and drops everything
/// after a terminal event or after the subscription was cancelled.
public struct Observer<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline
    let action: @Sendable (Event<Output, Failure>) -> Void

    /// Creates an observer that passes every event to `action`.
    @inlinable
    public init(_ action: @escaping @Sendable (Event<Output, Failure>) -> Void) {
        self.action = action
    }

    /// Sends an event.
    @inlinable
    public func send(_ event: Event<Output, Failure>) {
        action(event)
    }

    /// Sends a value.
    @inlinable
    public func send(_ value: Output) {
        action(.value(value))
    }

    /// Ends the subscription normally.
    @inlinable
    public func finish() {
        action(.finished)
    }

    /// Ends the subscription with `error`.
    @inlinable
    public func fail(_ error: Failure) {
        action(.failed(error))
    }

    /// Ends the subscription with the given completion.
    @inlinable
    func complete(_ completion: Completion<Failure>) {
        action(Event(completion))
    }
}
