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
/// on its own (``Signal/first(where:)``, ``Signal/retry(_:if:)``, …) subscribes it with a child token.
///
/// Thread safety: every method may be called from any thread at any time. Registered cancellables
/// are cancelled outside the token's lock, in registration order. The registrations are only
/// touched with `lock` held (which is why the class may be `@unchecked Sendable`); the cancelled
/// flag is an atomic, so ``isCancelled`` takes no lock.
public final class CancellationToken: Cancellable, @unchecked Sendable {
    /// Set, under `lock`, before the registrations are taken out to be cancelled.
    @usableFromInline
    let cancelled = Atomic<Bool>(false)
    private let lock = Lock()
    // Two inline slots: most tokens hold one or two registrations, and need no array. A
    // registration goes into a slot only if nothing registered later is held, so the slots and
    // `rest` stay in registration order; removing leaves a hole instead of shifting.
    @exclusivity(unchecked) private var first: (any Cancellable)?
    @exclusivity(unchecked) private var second: (any Cancellable)?
    /// The registrations after the two slots, in a box allocated only for a token that needs it
    /// (so a token stays small); removing one (a finished `flatMap` inner leaving its scope)
    /// takes constant time, however many there are.
    @exclusivity(unchecked) private var rest: MoreRegistrations?

    /// `true` for a token that something else cancels when it ends: a child (cancelled with its
    /// parent) or a `retry` attempt. The closures of a subscription may hold such a token
    /// strongly, since the cycle they form is broken when it is cancelled; they must never hold
    /// a root token (the one `sink` returns), which has to be able to deallocate to cancel.
    /// Operators that only read a scope (`catch`) use a scope token as it is, and make a child
    /// of a root one.
    @usableFromInline
    let isScope: Bool

    /// What subscriptions made in this token carry to the producers they reach (see
    /// ``SubscriptionContext``); a child token has its parent's.
    public let context: SubscriptionContext

    /// Creates an empty, active token whose subscriptions carry `context`.
    public init(context: SubscriptionContext = SubscriptionContext()) {
        isScope = false
        self.context = context
    }

    /// Creates an empty, active token; `isScope` as described on the property.
    @usableFromInline
    init(isScope: Bool, context: SubscriptionContext) {
        self.isScope = isScope
        self.context = context
    }

    /// A token the closures of a subscription may hold: this one if it is a scope token, a new
    /// child of it otherwise.
    @inlinable
    func makeScope() -> CancellationToken {
        isScope ? self : makeChild()
    }

    /// Creates a token that runs `action` when it is cancelled or released.
    public convenience init(_ action: @escaping @Sendable () -> Void) {
        self.init()
        add(ActionCancellable(action))
    }

    deinit {
        cancel()
    }

    /// `true` once the token has been cancelled.
    @inlinable
    public var isCancelled: Bool {
        cancelled.load(ordering: .acquiring)
    }

    /// Registers `cancellable` to be cancelled with this token. If the token is already
    /// cancelled, `cancellable` is cancelled at once, on the calling thread.
    ///
    /// - Returns: `false` if the token was already cancelled.
    @discardableResult
    public func add(_ cancellable: any Cancellable) -> Bool {
        let accepted = lock.withLock { () -> Bool in
            guard !cancelled.load(ordering: .relaxed) else { return false }
            if first == nil, second == nil, rest == nil {
                first = cancellable
            } else if second == nil, rest == nil {
                second = cancellable
            } else {
                if rest == nil { rest = MoreRegistrations() }
                rest!.list.append(cancellable, key: ObjectIdentifier(cancellable))
            }
            return true
        }
        if !accepted { cancellable.cancel() }
        return accepted
    }

    /// Registers `action` to run when this token is cancelled (at once if it already is).
    package func onCancel(_ action: @escaping @Sendable () -> Void) {
        add(ActionCancellable(action))
    }

    /// Forgets `cancellable` without cancelling it. Takes constant time (amortised), however
    /// many registrations the token holds.
    public func remove(_ cancellable: any Cancellable) {
        // The removed reference is released after the lock: it may be the last one.
        let removed = lock.withLock { () -> (any Cancellable)? in
            if let registered = first, registered === cancellable {
                first = nil
                return registered
            }
            if let registered = second, registered === cancellable {
                second = nil
                return registered
            }
            guard let more = rest else { return nil }
            let removed = more.list.remove(key: ObjectIdentifier(cancellable))
            // An empty box holds nothing of the user's: dropping it here releases nothing else.
            if more.list.isEmpty { rest = nil }
            return removed
        }
        _ = removed
    }

    /// Creates a token that is cancelled when this one is, but can also be cancelled on its own.
    public func makeChild() -> CancellationToken {
        let child = CancellationToken(isScope: true, context: context)
        add(child)
        return child
    }

    /// Cancels the token and everything registered with it, in registration order. Calling it
    /// again does nothing.
    public func cancel() {
        // Already cancelled (a token released after its subscription ended, the common case):
        // nothing to take, no lock.
        guard !cancelled.load(ordering: .acquiring) else { return }
        var taken0: (any Cancellable)?
        var taken1: (any Cancellable)?
        var takenRest: MoreRegistrations?
        let proceed = lock.withLock { () -> Bool in
            guard !cancelled.load(ordering: .relaxed) else { return false }
            cancelled.store(true, ordering: .releasing)
            swap(&taken0, &first)
            swap(&taken1, &second)
            swap(&takenRest, &rest)
            return true
        }
        guard proceed else { return }
        taken0?.cancel()
        taken1?.cancel()
        takenRest?.list.forEach { $0.cancel() }
    }

    /// Keeps this token alive in `bag` until the bag is emptied or released.
    public func store(in bag: CancellationBag) {
        bag.insert(self)
    }
}

/// The registrations of a ``CancellationToken`` beyond its two inline slots. Only touched with
/// the token's lock held.
private final class MoreRegistrations {
    var list = RegistrationList<ObjectIdentifier, any Cancellable>()
}

/// A flag that is raised when the token it is registered with is cancelled.
///
/// Operators that send two events for one upstream event (`first` sends the value, then
/// `finished`) check it between the two, so a downstream that cancels while handling the first
/// event receives nothing more. It holds no reference to the token, so closures held by the
/// upstream may capture it.
///
/// Thread safety: the flag is an `Atomic`; it is raised with release and read with acquire order.
@usableFromInline
final class CancellationFlag: Cancellable {
    @usableFromInline
    let raised = Atomic<Bool>(false)

    @inlinable
    init() {}

    /// `true` once the token the flag is registered with was cancelled.
    @inlinable
    var isCancelled: Bool {
        raised.load(ordering: .acquiring)
    }

    @usableFromInline
    func cancel() {
        raised.store(true, ordering: .releasing)
    }
}
