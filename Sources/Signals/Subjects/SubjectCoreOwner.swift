/// What ``PassthroughSubject`` and ``CurrentValueSubject`` share: one ``SubjectCore`` that
/// broadcasts, and so the same way to end it and the same signal to subscribe to.
@usableFromInline
protocol SubjectCoreOwner: AnyObject, Sendable {
    associatedtype Output: Sendable
    associatedtype Failure: Error

    /// The broadcaster: its subscribers, the queue of sends, the completion and, for a
    /// `CurrentValueSubject`, the current value.
    var core: SubjectCore<Output, Failure> { get }
}

extension SubjectCoreOwner {
    /// Ends every current and future subscription with `completion`. Only the first completion
    /// counts; later sends are ignored.
    @inlinable
    public func send(completion: Completion<Failure>) {
        core.send(Event(completion))
    }

    /// The signal to subscribe to. Every subscription adds one subscriber, removed when its token
    /// is cancelled or released; a `CurrentValueSubject`'s receives the current value first, then
    /// the later ones.
    public var signal: Signal<Output, Failure> {
        core.signal
    }
}
