import Synchronization

extension Signal {
    /// On a failure for which `shouldRetry` returns `true` (every failure unless given),
    /// subscribes to the upstream again, up to `times` more times. Other failures pass through
    /// at once.
    ///
    /// Every attempt re-runs the upstream's work from the start (request modifiers, token reads,
    /// URL building). The failure of the last attempt is passed on. Re-subscription is iterative,
    /// so an upstream that fails synchronously does not grow the stack.
    @inlinable
    public func retry(
        _ times: Int,
        if shouldRetry: @escaping @Sendable (Failure) -> Bool = { _ in true }
    ) -> Signal<Output, Failure> {
        let body = self.body
        return Signal(unchecked: { observer, token in
            // The first attempt is set up before the retrier is published (by `add`), so it
            // needs no lock.
            let attempt = CancellationToken(isScope: true, context: token.context)
            let retrier = Retrier(body: body, downstream: observer, remaining: Swift.max(0, times), shouldRetry: shouldRetry, firstAttempt: attempt)
            guard token.add(retrier) else { return }
            retrier.run(body, downstream: observer, attempt: attempt)
        })
    }
}

/// The state of one `retry` subscription. The upstream is subscribed and events are forwarded
/// outside the lock. When the subscription ends (its terminal event is passed on, or it is
/// cancelled) the upstream, the downstream and the predicate are released, after the lock.
///
/// Thread safety: the fields below `lock` are only touched with it held, which is why the class
/// may be `@unchecked Sendable`.
@usableFromInline
final class Retrier<Output: Sendable, Failure: Error>: Cancellable, @unchecked Sendable {
    @usableFromInline
    typealias Body = Signal<Output, Failure>.Body
    @usableFromInline
    typealias Predicate = @Sendable (Failure) -> Bool

    /// What an attempt needs, and what an ended subscription held (released by the caller after
    /// the lock). A struct, so that the closures it carries keep their abstraction when they
    /// leave `withLock`, which is generic in its result: no reabstraction thunk is allocated.
    @usableFromInline
    struct Parts {
        @usableFromInline let body: Body?
        @usableFromInline let downstream: Observer<Output, Failure>?
        @usableFromInline let shouldRetry: Predicate?
        @usableFromInline let attempt: CancellationToken?

        @inlinable
        init(body: Body?, downstream: Observer<Output, Failure>?, shouldRetry: Predicate?, attempt: CancellationToken?) {
            self.body = body
            self.downstream = downstream
            self.shouldRetry = shouldRetry
            self.attempt = attempt
        }
    }

    /// Raised (with `ended`, under the lock) when the subscription ends, so a `cancel()` after
    /// the end, the common case, returns without locking.
    @usableFromInline
    let over = Atomic<Bool>(false)
    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var remaining: Int
    @usableFromInline
    @exclusivity(unchecked) var current: CancellationToken?
    /// Cancelled, or the terminal event was passed on.
    @usableFromInline
    @exclusivity(unchecked) var ended = false
    /// Who subscribes: `idle`, `running` (a thread is in the attempt loop) or `requested` (a
    /// failure arrived while it was, so the loop runs one more attempt). An atomic, so the loop
    /// ends without a lock when nothing was requested.
    @usableFromInline
    let phase = Atomic<Int>(Retrier.running)
    @usableFromInline
    static var idle: Int { 0 }
    @usableFromInline
    static var running: Int { 1 }
    @usableFromInline
    static var requested: Int { 2 }
    @usableFromInline
    @exclusivity(unchecked) var body: Body?
    @usableFromInline
    @exclusivity(unchecked) var downstream: Observer<Output, Failure>?
    @usableFromInline
    @exclusivity(unchecked) var shouldRetry: Predicate?
    /// The context every attempt carries: the subscription's.
    @usableFromInline
    let context: SubscriptionContext

    @inlinable
    init(body: @escaping Body, downstream: Observer<Output, Failure>, remaining: Int, shouldRetry: @escaping Predicate, firstAttempt: CancellationToken) {
        context = firstAttempt.context
        self.body = body
        self.downstream = downstream
        self.remaining = remaining
        self.shouldRetry = shouldRetry
        current = firstAttempt
    }

    /// Marks the subscription as ended and takes out everything it holds. Call with the lock held.
    @inlinable
    func end() -> Parts {
        ended = true
        over.store(true, ordering: .releasing)
        defer {
            current = nil
            body = nil
            downstream = nil
            shouldRetry = nil
        }
        return Parts(body: body, downstream: downstream, shouldRetry: shouldRetry, attempt: current)
    }

    /// Starts an attempt with a new token (call with the lock held), or returns `nil` if the
    /// subscription ended.
    @inlinable
    func startAttempt() -> Parts? {
        guard !ended, let body, let downstream else { return nil }
        let attempt = CancellationToken(isScope: true, context: context)
        current = attempt
        return Parts(body: body, downstream: downstream, shouldRetry: nil, attempt: attempt)
    }

    /// Subscribes to the upstream again (after a failure); a request made while another call is
    /// subscribing (a synchronous failure) is handled by that call's loop instead of recursion.
    @inlinable
    func subscribe() {
        while true {
            let (claimed, seen) = phase.compareExchange(expected: Self.idle, desired: Self.running, ordering: .acquiringAndReleasing)
            if claimed { break }
            if seen == Self.requested { return }
            // Running: ask the running loop for one more attempt (unless it just went idle).
            if phase.compareExchange(expected: Self.running, desired: Self.requested, ordering: .acquiringAndReleasing).exchanged {
                return
            }
        }
        guard let next = lock.withLock({ startAttempt() }), let body = next.body, let downstream = next.downstream,
              let attempt = next.attempt else {
            phase.store(Self.idle, ordering: .releasing)
            return
        }
        run(body, downstream: downstream, attempt: attempt)
    }

    /// Runs `attempt` (set up as the current one, with `phase` running), then every attempt
    /// requested meanwhile.
    @inlinable
    func run(_ body: Body, downstream: Observer<Output, Failure>, attempt: CancellationToken) {
        var current = (body, downstream, attempt)
        while true {
            let (body, downstream, attempt) = current
            body(Observer { [self] event in receive(event, from: attempt, downstream: downstream) }, attempt)
            if phase.compareExchange(expected: Self.running, desired: Self.idle, ordering: .acquiringAndReleasing).exchanged {
                return
            }
            // A failure asked for another attempt while this one was being subscribed.
            phase.store(Self.running, ordering: .releasing)
            guard let next = lock.withLock({ startAttempt() }), let body = next.body, let downstream = next.downstream,
                  let attempt = next.attempt else {
                phase.store(Self.idle, ordering: .releasing)
                return
            }
            current = (body, downstream, attempt)
        }
    }

    @inlinable
    func receive(_ event: Event<Output, Failure>, from attempt: CancellationToken, downstream: Observer<Output, Failure>) {
        // After the lock: retry, or pass the event on if the subscription ended here (what it
        // held is in `released` until this function returns), or drop it (cancelled).
        var retry = false
        var released: Parts?
        switch event {
        case .value:
            downstream.send(event)
            return
        case .finished:
            released = lock.withLock { () -> Parts? in ended ? nil : end() }
        case .failed(let error):
            let predicate = lock.withLock { () -> Parts? in
                ended ? nil : Parts(body: nil, downstream: nil, shouldRetry: shouldRetry, attempt: nil)
            }
            guard let shouldRetry = predicate?.shouldRetry else { return }
            // The predicate is user code: it runs outside the lock, and may cancel.
            let wantsRetry = shouldRetry(error)
            released = lock.withLock { () -> Parts? in
                guard !ended else { return nil }
                if wantsRetry && remaining > 0 {
                    remaining -= 1
                    if current === attempt { current = nil }
                    retry = true
                    return nil
                }
                return end()
            }
        }
        // Ends the attempt, so everything it created is released.
        attempt.cancel()
        if retry {
            subscribe()
        } else if released != nil {
            downstream.send(event)
        }
    }

    // `cancel()` is reached through the `Cancellable` witness, which is not specialised for the
    // client's types: it only touches fields whose layout does not depend on them, and returns a
    // non-generic type from the lock, so it needs no runtime type metadata.
    @usableFromInline
    func cancel() {
        guard !over.load(ordering: .acquiring) else { return }
        var body: Body?
        var downstream: Observer<Output, Failure>?
        var shouldRetry: Predicate?
        let current = lock.withLock { () -> CancellationToken? in
            guard !ended else { return nil }
            ended = true
            over.store(true, ordering: .releasing)
            body = self.body
            downstream = self.downstream
            shouldRetry = self.shouldRetry
            self.body = nil
            self.downstream = nil
            self.shouldRetry = nil
            defer { self.current = nil }
            return self.current
        }
        current?.cancel()
        // Released here, after the lock.
        withExtendedLifetime((body, downstream, shouldRetry)) {}
    }
}
