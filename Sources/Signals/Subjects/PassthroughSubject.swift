/// A hot source that broadcasts the values you send to every current subscriber.
///
/// Unlike a ``Signal``, a subject is not cold: subscribing does not start any work, it only adds a
/// listener, and a subscriber receives the values sent after it subscribed. Use it to turn UI
/// events or callbacks into signals.
///
/// ```swift
/// let taps = PassthroughSubject<Void, Never>()
/// taps.signal.flatMapLatest { service.refresh() }.sink { … }.store(in: bag)
/// taps.send(())
/// ```
///
/// Guarantees:
/// - `send` may be called from any thread. Sends are serialised: a send that arrives while another
///   thread is delivering is queued and delivered by that thread, in order, before it returns. No
///   lock is held while subscribers run, so a subscriber may send again (the value is delivered
///   after the current one) or cancel itself or others.
/// - After ``send(completion:)``, nothing more is accepted; every subscriber receives the
///   completion once and is released, and a subscriber that arrives later receives the completion
///   at once.
/// - Cancelling a subscription removes the subscriber; it receives nothing more, even when it is
///   cancelled in the middle of a broadcast.
public final class PassthroughSubject<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline let core = SubjectCore<Output, Failure>()

    /// Creates a subject with no subscribers.
    public init() {}

    /// Sends `value` to every current subscriber. Ignored after a completion.
    @inlinable
    public func send(_ value: Output) {
        core.send(.value(value))
    }

    /// Ends every current and future subscription with `completion`. Only the first completion
    /// counts; later sends are ignored.
    @inlinable
    public func send(completion: Completion<Failure>) {
        core.send(Event(completion))
    }

    /// The signal to subscribe to. Every subscription adds one subscriber, removed when its token
    /// is cancelled or released.
    public var signal: Signal<Output, Failure> {
        core.signal
    }
}
