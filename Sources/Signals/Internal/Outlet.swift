import Synchronization

/// The guard between a producer and its downstream: an ``Emitter`` (the serialiser, for one
/// observer) under a lock of its own, plus the producer's teardown.
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
    @exclusivity(unchecked) var emitter: Emitter<Output, Failure>
    /// The teardown has run or must run as soon as it is set.
    @usableFromInline
    @exclusivity(unchecked) var disposed = false
    @usableFromInline
    @exclusivity(unchecked) var teardown: Teardown?
    /// What ``cancel()`` does, specialised where the outlet is created (see ``cancel()``).
    @usableFromInline
    let canceller: @Sendable (Outlet) -> Void

    @inlinable
    init(_ downstream: Observer<Output, Failure>) {
        emitter = Emitter(downstream)
        // A reference to a static method: where the client's types are known it captures
        // nothing, so storing it allocates nothing.
        canceller = Outlet.cancelled
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

    @inlinable @inline(__always)
    func send(_ event: Event<Output, Failure>) {
        guard let target = lock.withLock({ emitter.accept(event) }) else { return }
        if Emitter.deliver(event, to: target, next: { lock.withLock { emitter.next() } }) {
            dispose()
        }
    }

    /// After the terminal event: runs the teardown (once) and drops what the queue held.
    @inlinable
    func dispose() {
        let released = lock.withLock { () -> (Teardown?, FIFOBuffer<Event<Output, Failure>>) in
            disposed = true
            defer { teardown = nil }
            return (teardown, emitter.close().1)
        }
        released.0?()
    }

    /// `cancel()` is reached through the `Cancellable` witness, which is not specialised for the
    /// client's types: there, every type that depends on them (the emitter, its queue, the
    /// observer, the tuple of what is released) would cost a runtime metadata look-up, a few
    /// hundred instructions each, five or more per cancellation. So it only calls ``canceller``,
    /// which was specialised where the outlet was made.
    @usableFromInline
    func cancel() {
        canceller(self)
    }

    /// The work of ``cancel()``: ends the subscription, runs the teardown, and releases what the
    /// subscription held, after the lock.
    @inlinable
    static func cancelled(_ outlet: Outlet) {
        var released: (Observer<Output, Failure>?, FIFOBuffer<Event<Output, Failure>>)?
        let teardown = outlet.lock.withLock { () -> Teardown? in
            guard !outlet.disposed else { return nil }
            outlet.disposed = true
            released = outlet.emitter.close()
            defer { outlet.teardown = nil }
            return outlet.teardown
        }
        teardown?()
        withExtendedLifetime(released) {}
    }
}
