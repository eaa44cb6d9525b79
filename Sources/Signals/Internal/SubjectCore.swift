import Synchronization

/// The machinery shared by ``PassthroughSubject`` and ``CurrentValueSubject``: a list of
/// subscribers and a serialised broadcast.
///
/// - Sends from any thread are serialised without holding the lock while subscribers run: a send
///   that finds another one delivering is queued, and the delivering thread delivers it, in order,
///   before it returns. A send with no contention costs two lock round trips (start, then "queue
///   empty?") plus one atomic load per subscriber, and allocates nothing.
/// - Once a terminal event is accepted, nothing else is; subscribers are dropped when it is
///   delivered, and a subscriber that arrives later receives the terminal event at once.
/// - A replaying core (the current-value flavour) delivers the current value to each new
///   subscriber through the same serialised path, so a new subscriber sees the current value and
///   then every later value, never out of order and never concurrently.
///
/// Deliveries go through the package's one ``Serializer``, whose items are events and late
/// subscribers joining the list.
///
/// Thread safety: all state is behind one `Lock`; subscriber cancellation is an atomic flag
/// checked before every delivery, so a cancelled subscriber receives nothing more even when it is
/// cancelled by another subscriber during a broadcast.
///
/// The send path is `@inlinable` so that it is specialised for the subject's concrete types in the
/// caller's module: unspecialised generic code would look up type metadata at run time on every
/// send, which costs more than the locks.
@usableFromInline
final class SubjectCore<Output: Sendable, Failure: Error>: @unchecked Sendable {
    // @unchecked: all mutable state is `unsafeState`, touched only under `lock`.
    /// A subscriber as the broadcast list holds it: the observer lives here, so dropping the entry
    /// (on cancel or on the terminal event) releases the downstream chain even while the user
    /// still holds the token.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let subscription: SubjectSubscription<Output, Failure>
        @usableFromInline let observer: Observer<Output, Failure>

        @inlinable
        init(subscription: SubjectSubscription<Output, Failure>, observer: Observer<Output, Failure>) {
            self.subscription = subscription
            self.observer = observer
        }
    }

    /// What the serialiser delivers, in order.
    @usableFromInline
    enum Item: Sendable {
        /// An event, for every subscriber in the list when its turn comes.
        case event(Event<Output, Failure>)
        /// A subscriber that arrived while a delivery was under way: it joins the list at this
        /// point of the sequence (so it receives nothing sent before it subscribed), and a
        /// replaying core's subscriber then receives `value`.
        case attach(Entry, Output?)
    }

    /// What the delivering thread does with an item, after the lock.
    @usableFromInline
    enum Step: Sendable {
        case broadcast(Event<Output, Failure>, Targets)
        case replay(Entry, Output)
        case skip
    }

    /// The subscribers, in subscription order, by subscription.
    @usableFromInline
    typealias Entries = RegistrationList<ObjectIdentifier, Entry>

    /// A snapshot of the subscribers for one broadcast (holes included): the list's storage,
    /// shared until the list changes, so taking it costs one retain.
    @usableFromInline
    typealias Targets = ContiguousArray<Entries.Slot?>

    @usableFromInline
    struct State {
        @usableFromInline var entries = Entries()
        @usableFromInline var current: Output?
        @usableFromInline var terminal: Event<Output, Failure>?
        @usableFromInline var serializer = Serializer<Item>()

        init(current: Output?) {
            self.current = current
        }

        /// Accepts `event` (ignored after a terminal event): returns the subscribers to deliver
        /// it to now, or `nil` if it was queued behind the delivering thread or ignored.
        @inlinable @inline(__always)
        mutating func accept(_ event: Event<Output, Failure>) -> Targets? {
            guard terminal == nil else { return nil }
            if event.isTerminal { terminal = event }
            guard serializer.claim(.event(event)) else { return nil }
            let targets = entries.slots
            if event.isTerminal { entries = Entries() }
            return targets
        }

        /// Takes `item`'s place in the sequence (under the lock): what to deliver for it.
        @inlinable
        mutating func step(for item: Item) -> Step {
            switch item {
            case .event(let event):
                let targets = entries.slots
                if event.isTerminal { entries = Entries() }
                return .broadcast(event, targets)
            case .attach(let entry, let value):
                guard !entry.subscription.isCancelled else { return .skip }
                entries.append(entry, key: ObjectIdentifier(entry.subscription))
                guard let value else { return .skip }
                return .replay(entry, value)
            }
        }
    }

    /// Guards `unsafeState`; see ``withState(_:)``.
    @usableFromInline let lock = Lock()
    /// Only touched inside ``withState(_:)``.
    @usableFromInline @exclusivity(unchecked) var unsafeState: State

    /// Runs `body` with the state, under the lock. `body` must not call out.
    @inlinable
    func withState<R>(_ body: (inout State) -> R) -> R {
        lock.withLock { body(&unsafeState) }
    }
    @usableFromInline let replays: Bool

    /// A core without a current value (passthrough).
    @usableFromInline
    init() {
        unsafeState = State(current: nil)
        replays = false
    }

    /// A core that keeps `current` and replays it to every new subscriber.
    @usableFromInline
    init(current: Output) {
        unsafeState = State(current: current)
        replays = true
    }

    /// The current value of a replaying core.
    @usableFromInline
    var current: Output? {
        withState { $0.current }
    }

    /// Whether a terminal event has been accepted.
    var isCompleted: Bool {
        withState { $0.terminal != nil }
    }

    /// The signal that subscribes to this core.
    @usableFromInline
    var signal: Signal<Output, Failure> {
        Signal(unchecked: { [self] observer, token in attach(observer, in: token) })
    }

    /// Broadcasts `event` to every subscriber, or queues it if another thread is delivering.
    /// Ignored once a terminal event was accepted.
    @inlinable
    func send(_ event: Event<Output, Failure>) {
        guard let targets = replays ? sendReplacingCurrent(event) : withState({ $0.accept(event) }) else { return }
        Self.broadcast(event, to: targets)
        // The common case, nothing queued meanwhile, in one short critical section.
        if !withState({ $0.serializer.endIfIdle() }) { deliverQueued() }
    }

    /// ``State/accept(_:)`` for a replaying core, which also makes a value the current one; the
    /// value it replaces is released after the lock (its `deinit` may send).
    @inlinable
    func sendReplacingCurrent(_ event: Event<Output, Failure>) -> Targets? {
        let (targets, replaced) = withState { state -> (Targets?, Output?) in
            guard state.terminal == nil else { return (nil, nil) }
            var replaced: Output?
            if case .value(let value) = event {
                replaced = state.current
                state.current = value
            }
            return (state.accept(event), replaced)
        }
        withExtendedLifetime(replaced) {}
        return targets
    }

    /// Adds a subscriber for the life of `token`.
    func attach(_ observer: Observer<Output, Failure>, in token: CancellationToken) {
        let subscription = SubjectSubscription(core: self)
        guard token.add(subscription) else { return }
        let entry = Entry(subscription: subscription, observer: observer)
        let start = withState { state -> Event<Output, Failure>? in
            if let terminal = state.terminal { return terminal }
            // Checked under the lock: a cancel that sets the flag after this point finds the
            // entry in the list (it removes it under the same lock).
            guard !subscription.isCancelled else { return nil }
            let replay = replays ? state.current : nil
            if replay == nil, !state.serializer.isDelivering {
                state.entries.append(entry, key: ObjectIdentifier(subscription))
                return nil
            }
            // A replay is delivered like any item; and a subscriber arriving during a delivery
            // joins behind what was sent (and queued) before it subscribed.
            guard state.serializer.claim(.attach(entry, replay)) else { return nil }
            state.entries.append(entry, key: ObjectIdentifier(subscription))
            return replay.map { .value($0) }
        }
        guard let start else { return }
        if start.isTerminal {
            observer.send(start)
            return
        }
        if !subscription.isCancelled { observer.send(start) }
        deliverQueued()
    }

    /// Removes a cancelled subscriber. The entry is released outside the lock: dropping an
    /// observer may run arbitrary deinitialisers.
    func remove(_ subscription: SubjectSubscription<Output, Failure>) {
        let removed = withState { state in state.entries.remove(key: ObjectIdentifier(subscription)) }
        _ = removed
    }

    /// For the delivering thread, after its own item: delivers whatever other threads (or
    /// re-entrant sends) queued meanwhile, until the queue is empty.
    @inlinable
    func deliverQueued() {
        while let step = withState({ state in state.serializer.next().map { state.step(for: $0) } }) {
            switch step {
            case .broadcast(let event, let entries):
                Self.broadcast(event, to: entries)
            case .replay(let entry, let value):
                if !entry.subscription.isCancelled { entry.observer.send(.value(value)) }
            case .skip:
                break
            }
        }
    }

    @inlinable
    static func broadcast(_ event: Event<Output, Failure>, to targets: Targets) {
        // Read through the optional without binding it, so that the entries are borrowed from
        // the snapshot rather than copied (no retain per subscriber).
        for slot in targets where slot != nil && !slot.unsafelyUnwrapped.element.subscription.isCancelled {
            slot.unsafelyUnwrapped.element.observer.send(event)
        }
    }
}

/// One subscription to a subject, registered with the subscriber's token.
///
/// Thread safety: immutable apart from an atomic flag; cancelling is idempotent and removes the
/// subscriber from the core's list.
@usableFromInline
final class SubjectSubscription<Output: Sendable, Failure: Error>: Cancellable {
    private let core: SubjectCore<Output, Failure>
    @usableFromInline let cancelled = Atomic<Bool>(false)

    init(core: SubjectCore<Output, Failure>) {
        self.core = core
    }

    @inlinable
    var isCancelled: Bool {
        cancelled.load(ordering: .acquiring)
    }

    @usableFromInline
    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        core.remove(self)
    }
}
