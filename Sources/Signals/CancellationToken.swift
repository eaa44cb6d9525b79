import Synchronization

/// The cancellation scope of a subscription: cancelling it (or releasing it) cancels everything
/// registered with it.
///
/// `sink` and `observe` return one, like Combine's `AnyCancellable`: keep it for as long as you
/// want the events, and release or cancel it to stop the work. The work's teardown runs (a
/// URLSession task is cancelled, a timer invalidated, a pending wait dropped) and every object the
/// subscription created is released.
///
/// Tokens are also the building block of operators: an operator that needs to cancel its upstream
/// on its own (``Signal/first()``, ``Signal/retry(_:)``, …) subscribes it with a child token.
///
/// Thread safety: every method may be called from any thread at any time. Registered cancellables
/// are cancelled outside the token's lock, in registration order.
public final class CancellationToken: Cancellable, Hashable {
    private struct State {
        var isCancelled = false
        var first: (any Cancellable)?
        var rest: [any Cancellable] = []
    }

    private let state = Mutex(State())

    /// Creates an empty, active token.
    public init() {}

    /// Creates a token that runs `action` when it is cancelled or released.
    public convenience init(_ action: @escaping @Sendable () -> Void) {
        self.init()
        add(ActionCancellable(action))
    }

    deinit {
        cancel()
    }

    /// `true` once the token has been cancelled.
    public var isCancelled: Bool {
        state.withLock { $0.isCancelled }
    }

    /// Registers `cancellable` to be cancelled with this token. If the token is already
    /// cancelled, `cancellable` is cancelled at once, on the calling thread.
    ///
    /// - Returns: `false` if the token was already cancelled.
    @discardableResult
    public func add(_ cancellable: any Cancellable) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.isCancelled else { return false }
            if state.first == nil {
                state.first = cancellable
            } else {
                state.rest.append(cancellable)
            }
            return true
        }
        if !accepted { cancellable.cancel() }
        return accepted
    }

    /// Registers `action` to run when this token is cancelled (at once if it already is).
    public func onCancel(_ action: @escaping @Sendable () -> Void) {
        add(ActionCancellable(action))
    }

    /// Forgets `cancellable` without cancelling it.
    public func remove(_ cancellable: any Cancellable) {
        // The removed reference is released after the lock: it may be the last one.
        let removed = state.withLock { state -> (any Cancellable)? in
            if let first = state.first, first === cancellable {
                state.first = state.rest.isEmpty ? nil : state.rest.removeFirst()
                return first
            } else if let index = state.rest.firstIndex(where: { $0 === cancellable }) {
                return state.rest.remove(at: index)
            }
            return nil
        }
        _ = removed
    }

    /// Creates a token that is cancelled when this one is, but can also be cancelled on its own.
    public func makeChild() -> CancellationToken {
        let child = CancellationToken()
        add(child)
        return child
    }

    /// Cancels the token and everything registered with it. Calling it again does nothing.
    public func cancel() {
        let (first, rest) = state.withLock { state -> ((any Cancellable)?, [any Cancellable]) in
            guard !state.isCancelled else { return (nil, []) }
            state.isCancelled = true
            defer {
                state.first = nil
                state.rest = []
            }
            return (state.first, state.rest)
        }
        first?.cancel()
        for cancellable in rest { cancellable.cancel() }
    }

    /// Keeps this token alive in `bag` until the bag is emptied or released.
    public func store(in bag: CancellationBag) {
        bag.insert(self)
    }

    public static func == (lhs: CancellationToken, rhs: CancellationToken) -> Bool {
        lhs === rhs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

/// A flag that is raised when the token it is registered with is cancelled.
///
/// Operators that send two events for one upstream event (`first` sends the value, then
/// `finished`) check it between the two, so a downstream that cancels while handling the first
/// event receives nothing more. It holds no reference to the token, so closures held by the
/// upstream may capture it.
///
/// Thread safety: the flag is an `Atomic`; it is raised with release and read with acquire order.
final class CancellationFlag: Cancellable {
    private let raised = Atomic<Bool>(false)

    init() {}

    /// `true` once the token the flag is registered with was cancelled.
    var isCancelled: Bool {
        raised.load(ordering: .acquiring)
    }

    func cancel() {
        raised.store(true, ordering: .releasing)
    }
}
