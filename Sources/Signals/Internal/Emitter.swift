/// The ``Serializer`` for one observer: serialised delivery plus the event contract — at most
/// one terminal event, nothing after it, nothing after ``close()``.
///
/// A value embedded in its owner's locked state: an ``Outlet`` (a generator's observer), and the
/// operators whose output depends on state they keep under a lock (flatMap's accounting, zip's
/// buffers, combineLatest's latest values). They decide *what* to emit and *accept* it for
/// delivery in the same critical section, so the order of decisions is the order of delivery,
/// with one lock instead of two.
///
/// Protocol, with `state` the owner's locked state:
/// ```swift
/// let target = state.withLock { $0.emitter.accept(event) }   // plus any bookkeeping
/// if let target { Emitter.deliver(event, to: target) { state.withLock { $0.emitter.next() } } }
/// ```
/// The delivering thread keeps `target` for its whole loop; `next` only tells it whether there is
/// more (and whether the emitter was closed meanwhile: then it stops).
/// `accept` returns the observer only to the thread that must deliver; a thread that finds
/// another one delivering leaves its event in the queue, and the delivering thread drains it
/// before it returns. No lock is held while the downstream runs.
@usableFromInline
struct Emitter<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline var downstream: Observer<Output, Failure>?
    @usableFromInline var serializer = Serializer<Event<Output, Failure>>()
    /// A terminal event was accepted, or the emitter was closed.
    @usableFromInline var isClosed = false

    @inlinable
    init(_ downstream: Observer<Output, Failure>) {
        self.downstream = downstream
    }

    /// Accepts `event` for delivery. Returns the observer if the caller must deliver it now, `nil`
    /// if it was queued for the delivering thread or dropped (after a terminal event or close).
    @inlinable
    mutating func accept(_ event: Event<Output, Failure>) -> Observer<Output, Failure>? {
        guard !isClosed, let downstream else { return nil }
        if event.isTerminal { isClosed = true }
        guard serializer.claim(event) else { return nil }
        if event.isTerminal { self.downstream = nil }
        return downstream
    }

    /// After a delivery: the next queued event, or `nil` when the queue is empty or the emitter
    /// was closed (the caller then stops delivering).
    @inlinable
    mutating func next() -> Event<Output, Failure>? {
        guard downstream != nil, let event = serializer.next() else {
            serializer.isDelivering = false
            return nil
        }
        if event.isTerminal { downstream = nil }
        return event
    }

    /// Drops the downstream and everything queued: nothing more is delivered. Returns what it
    /// held, so the caller releases it outside the lock.
    @inlinable
    mutating func close() -> (Observer<Output, Failure>?, FIFOBuffer<Event<Output, Failure>>) {
        isClosed = true
        defer { downstream = nil }
        return (downstream, serializer.clear())
    }

    /// Delivers `event` to `target`, then whatever `next` (the caller's locked ``next()``) hands
    /// back, until the queue is empty. Returns `true` if the last event delivered was terminal.
    @inlinable
    @discardableResult
    static func deliver(
        _ event: Event<Output, Failure>,
        to target: Observer<Output, Failure>,
        next: () -> Event<Output, Failure>?
    ) -> Bool {
        var current = event
        while true {
            target.send(current)
            // Nothing follows a terminal event (the emitter accepts nothing after it).
            if current.isTerminal { return true }
            guard let following = next() else { return false }
            current = following
        }
    }
}
