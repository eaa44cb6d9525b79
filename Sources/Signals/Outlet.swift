import Synchronization

/// The guard between a producer and its downstream: the one place the event contract is enforced.
///
/// - Calls from several threads are serialised without holding the lock while the downstream
///   runs: a thread that finds another one delivering queues its event, and the delivering thread
///   drains the queue before it returns.
/// - At most one terminal event gets through, and nothing after it.
/// - After `cancel()`, nothing is delivered; events already queued are dropped.
/// - The downstream observer and the teardown are released as soon as the subscription ends, so
///   a producer that keeps its observer does not keep the chain alive. What it held is released
///   after the lock, since a `deinit` of something it captured may run user code.
///
/// The hot path is `@inlinable`, so a client specialises it for its own types. An uncontended
/// value costs two short critical sections (claim the delivery, then "queue empty?").
///
/// Thread safety: the fields below `lock` are only touched with it held, which is why the class
/// may be `@unchecked Sendable`.
@usableFromInline
final class Outlet<Output: Sendable, Failure: Error>: Cancellable, @unchecked Sendable {
    @usableFromInline
    typealias Teardown = @Sendable () -> Void

    @usableFromInline
    let lock = Lock()
    @usableFromInline
    @exclusivity(unchecked) var downstream: Observer<Output, Failure>?
    @usableFromInline
    @exclusivity(unchecked) var emitting = false
    /// A terminal event was accepted (delivered or queued) or the outlet was cancelled.
    @usableFromInline
    @exclusivity(unchecked) var completed = false
    /// The teardown has run or must run as soon as it is set.
    @usableFromInline
    @exclusivity(unchecked) var disposed = false
    @usableFromInline
    @exclusivity(unchecked) var queue = FIFOBuffer<Event<Output, Failure>>()
    @usableFromInline
    @exclusivity(unchecked) var teardown: Teardown?

    @inlinable
    init(_ downstream: Observer<Output, Failure>) {
        self.downstream = downstream
    }

    /// The observer handed to the producer.
    @inlinable
    var observer: Observer<Output, Failure> {
        Observer { [self] event in send(event) }
    }

    /// Stores the producer's teardown, or runs it at once if the subscription already ended.
    @inlinable
    func setTeardown(_ teardown: Teardown?) {
        guard let teardown else { return }
        let runNow = lock.withLock { () -> Bool in
            if disposed { return true }
            self.teardown = teardown
            return false
        }
        if runNow { teardown() }
    }

    @inlinable
    func send(_ event: Event<Output, Failure>) {
        let isTerminal = event.isTerminal
        let first = lock.withLock { () -> Observer<Output, Failure>? in
            guard !completed, let target = downstream else { return nil }
            if isTerminal { completed = true }
            if emitting {
                queue.append(event)
                return nil
            }
            emitting = true
            if isTerminal { downstream = nil }
            return target
        }
        guard let first else { return }
        deliver(event, to: first)
    }

    /// Delivers `event`, then whatever other threads queued meanwhile, until the queue is empty.
    /// The delivering thread keeps `target` for the whole loop; the lock only tells it whether
    /// there is more, and whether the outlet was cancelled meanwhile (then it stops).
    @inlinable
    func deliver(_ event: Event<Output, Failure>, to target: Observer<Output, Failure>) {
        var current = event
        while true {
            target.send(current)
            if current.isTerminal {
                dispose()
                return
            }
            let next = lock.withLock { () -> Event<Output, Failure>? in
                if downstream != nil, let event = queue.popFirst() {
                    if event.isTerminal { downstream = nil }
                    return event
                }
                emitting = false
                return nil
            }
            guard let next else { return }
            current = next
        }
    }

    /// After the terminal event: runs the teardown (once) and drops what the queue held.
    @inlinable
    func dispose() {
        let released = lock.withLock { () -> (Teardown?, FIFOBuffer<Event<Output, Failure>>) in
            disposed = true
            defer {
                teardown = nil
                queue = FIFOBuffer()
            }
            return (teardown, queue)
        }
        released.0?()
    }

    // `cancel()` is reached through the `Cancellable` witness, which is not specialised for the
    // client's types: it returns a non-generic type from the lock and moves fields out into
    // locals, so it needs no runtime type metadata.
    @usableFromInline
    func cancel() {
        // What the subscription held is taken out under the lock and released after it.
        var target: Observer<Output, Failure>?
        var queued: FIFOBuffer<Event<Output, Failure>>?
        let teardown = lock.withLock { () -> Teardown? in
            guard !disposed else { return nil }
            completed = true
            disposed = true
            target = downstream
            downstream = nil
            if !queue.isEmpty {
                queued = queue
                queue = FIFOBuffer()
            }
            defer { self.teardown = nil }
            return self.teardown
        }
        teardown?()
        withExtendedLifetime((target, queued)) {}
    }
}
