/// The event serialiser: the one piece that makes deliveries from any number of threads happen one
/// at a time, in order, without holding a lock while the receiver runs.
///
/// It lives inside its owner's locked state (``Emitter`` for one observer, and through it
/// ``Outlet`` and the operators with state of their own; ``SubjectCore`` for a subject's
/// subscribers) and is only touched under the owner's lock:
///
/// - ``claim(_:)``: a thread with something to deliver claims the delivery. If no one is
///   delivering, it becomes the delivering thread and delivers the item itself, after the lock;
///   otherwise the item joins the queue and the thread returns at once (no waiting, so a receiver
///   that sends again, re-entrantly, cannot deadlock).
/// - ``next()``: after each delivery, the delivering thread takes the next queued item (under
///   the lock) and delivers it (after the lock), until the queue is empty; then the delivery is
///   over. (The loop itself is the owner's: ``Emitter/deliver(_:to:next:)`` for one observer,
///   ``SubjectCore/deliverQueued()`` for a subject.)
/// - ``clear()``: drops what is queued; the owner releases it after its lock.
///
/// Because the decision to deliver and the bookkeeping that goes with it (a terminal event
/// accepted, a subscriber joining) happen in one critical section, the order of decisions is the
/// order of delivery. The queue clears each slot as it pops, so nothing the receiver may own is
/// released under the lock.
@usableFromInline
struct Serializer<Item> {
    /// A thread is delivering: new items join the queue.
    @usableFromInline var isDelivering = false
    @usableFromInline var queue = FIFOBuffer<Item>()

    @inlinable
    init() {}

    /// Claims the delivery of `item`. Returns `true` if the caller must deliver it now (it is
    /// the delivering thread until ``next()`` returns `nil`); `false` if it was queued for the
    /// thread that is delivering.
    @inlinable
    mutating func claim(_ item: Item) -> Bool {
        if isDelivering {
            queue.append(item)
            return false
        }
        isDelivering = true
        return true
    }

    /// For the delivering thread, after a delivery: the next queued item, or `nil` when there is
    /// none (the delivery is then over).
    @inlinable
    mutating func next() -> Item? {
        // The common case, nothing queued, without touching the buffer's storage.
        if queue.isEmpty {
            isDelivering = false
            return nil
        }
        return queue.popFirst()
    }

    /// For the delivering thread, after a delivery: ends the delivery if nothing was queued
    /// meanwhile (the common case) and returns `true`; returns `false`, leaving the queue to
    /// ``next()``, otherwise.
    @inlinable
    mutating func endIfIdle() -> Bool {
        guard queue.isEmpty else { return false }
        isDelivering = false
        return true
    }

    /// Drops what is queued, and returns it so that the caller releases it after its lock. The
    /// delivering thread (if any) finds the queue empty at its next ``next()``.
    @inlinable
    mutating func clear() -> FIFOBuffer<Item> {
        defer { queue = FIFOBuffer() }
        return queue
    }
}

extension Serializer: Sendable where Item: Sendable {}
