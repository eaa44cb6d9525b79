/// A hot source that holds a current value: every new subscriber receives it first, then every
/// value sent after it.
///
/// ```swift
/// let isLoading = CurrentValueSubject<Bool, Never>(false)
/// isLoading.signal.sink { spinner.isHidden = !$0 }.store(in: bag)   // receives `false` at once
/// isLoading.value = true                                             // receives `true`
/// ```
///
/// Guarantees, in addition to those of ``PassthroughSubject``:
/// - ``value`` always reads the most recently sent value (set when the send is accepted, even if
///   its delivery is still queued behind another thread's).
/// - A subscriber that arrives while another thread is delivering receives the current value at
///   its place in the sequence, then the later values: never out of order, never a value twice.
/// - After a completion, ``value`` keeps the last value; setting it is ignored, and a new
///   subscriber receives only the completion.
public final class CurrentValueSubject<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline let core: SubjectCore<Output, Failure>

    /// Creates a subject whose current value is `value`.
    public init(_ value: Output) {
        core = SubjectCore(current: value)
    }

    /// The current value. Setting it makes the new value the current one and sends it to every
    /// current subscriber; it is ignored after a completion.
    @inlinable
    public var value: Output {
        get {
            // A replaying core always holds a value.
            core.current!
        }
        set {
            core.send(.value(newValue))
        }
    }

    /// Ends every current and future subscription with `completion`. Only the first completion
    /// counts; later sends are ignored.
    @inlinable
    public func send(completion: Completion<Failure>) {
        core.send(Event(completion))
    }

    /// The signal to subscribe to. Every subscription receives the current value first, then the
    /// later ones, until its token is cancelled or released.
    public var signal: Signal<Output, Failure> {
        core.signal
    }
}
