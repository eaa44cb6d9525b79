import Dispatch
import Signals
import Testing

/// "No lock is held while user code runs" includes a value's `deinit`. Every operator that holds
/// values (queued, waiting, buffered, latest) releases them after its lock, so a value whose
/// `deinit` calls back into the same subscription (sends into its source, cancels it) neither
/// traps ("Recursive call to lock") nor deadlocks.
@Suite(.timeLimit(.minutes(1)))
struct ReleaseOutsideLocksTests {
    // MARK: - Cancelling drops what waits

    @Test func receiveOnReleasesQueuedValuesOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        let token = pool.subject.signal.receive(on: scheduler).sink { _ in }
        pool.send(1)
        pool.send(2)
        token.cancel()
        #expect(pool.returnedCount == 2)
    }

    @Test func delayReleasesWaitingValuesOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        let token = pool.subject.signal.delay(for: .seconds(1), scheduler: scheduler).sink { _ in }
        pool.send(1)
        pool.send(2)
        token.cancel()
        #expect(pool.returnedCount == 2)
    }

    @Test func debounceReleasesTheWaitingValueOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        let token = pool.subject.signal.debounce(for: .seconds(1), scheduler: scheduler).sink { _ in }
        pool.send(1)
        token.cancel()
        #expect(pool.returnedCount == 1)
    }

    @Test func throttleReleasesTheWaitingValueOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        let token = pool.subject.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: true).sink { _ in }
        pool.send(1)
        token.cancel()
        #expect(pool.returnedCount == 1)
    }

    @Test func theAsyncBridgeReleasesBufferedValuesOutsideItsLockWhenCancelled() async {
        let pool = LeasePool()
        let burst = Signal<Lease, Never> { observer in
            observer.send(pool.lease(1))
            observer.send(pool.lease(2))
            return nil
        }
        let signal = Signal.merge([pool.subject.signal, burst])
        let ids = await Task {
            var iterator = signal.values.makeAsyncIterator()
            // Subscribes: both leases arrive at once, the second waits in the buffer.
            let first = await iterator.next(isolation: nil)?.id
            withUnsafeCurrentTask { $0?.cancel() }
            // Cancelled: drops the buffer.
            let second = await iterator.next(isolation: nil)?.id
            return (first, second)
        }.value
        #expect(ids.0 == 1)
        #expect(ids.1 == nil)
        #expect(pool.returnedCount == 2)
    }

    @Test func collectReleasesCollectedValuesOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let token = pool.subject.signal.collect().sink { _ in }
        pool.send(1)
        token.cancel()
        #expect(pool.returnedCount == 1)
    }

    @Test func zipReleasesWaitingValuesOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let other = PassthroughSubject<Int, Never>()
        let token = pool.subject.signal.zip(other.signal).sink { _ in }
        pool.send(1)
        token.cancel()
        #expect(pool.returnedCount == 1)
    }

    @Test func flatMapReleasesWaitingValuesOutsideItsLockWhenCancelled() {
        let pool = LeasePool()
        let token = pool.subject.signal
            .flatMap(maxConcurrent: 1) { _ in Signal<Int, Never>.never }
            .sink { _ in }
        pool.send(1)
        pool.send(2)
        pool.send(3)
        token.cancel()
        #expect(pool.returnedCount == 3)
    }

    // MARK: - Replacing a held value

    @Test func debounceReleasesAReplacedValueOutsideItsLock() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        pool.token.token = pool.subject.signal.debounce(for: .seconds(1), scheduler: scheduler).sink { _ in }
        pool.send(1)
        pool.send(2)
        #expect(pool.returnedCount == 2)
    }

    @Test func throttleReleasesAReplacedValueOutsideItsLock() {
        let pool = LeasePool()
        let scheduler = TestScheduler()
        pool.token.token = pool.subject.signal.throttle(for: .seconds(1), scheduler: scheduler, latest: true).sink { _ in }
        pool.send(1)
        pool.send(2)
        #expect(pool.returnedCount == 2)
    }

    @Test func combineLatestReleasesAReplacedValueOutsideItsLock() {
        let pool = LeasePool()
        let other = PassthroughSubject<Int, Never>()
        pool.token.token = pool.subject.signal.combineLatest(other.signal).sink { _ in }
        pool.send(1)
        pool.send(2)
        #expect(pool.returnedCount == 2)
    }

    @Test func currentValueSubjectReleasesTheReplacedValueOutsideItsLock() {
        let returned = Counter()
        let box = ContractTokenBox()
        let subject = CurrentValueSubject<Lease, Never>(Lease(0) { _ in
            returned.increment()
            box.cancel()
        })
        box.token = subject.signal.sink { _ in }
        subject.value = Lease(1)
        #expect(returned.count == 1)
    }

    // MARK: - The serialisers release delivered events

    @Test func aGeneratorReleasesDeliveredEventsOutsideItsLock() {
        let pool = LeasePool()
        let observers = Locked<Observer<Lease, Never>?>(nil)
        let signal = Signal<Lease, Never> { observer in
            observers.withLock { $0 = observer }
            return nil
        }
        pool.token.token = signal.sink { lease in
            // While the first value is delivered, two more are queued behind it.
            guard lease.id == 0 else { return }
            let observer = observers.withLock { $0 }
            observer?.send(pool.lease(1))
            observer?.send(pool.lease(2))
        }
        observers.withLock { $0 }?.send(Lease(0))
        #expect(pool.returnedCount == 2)
    }

    @Test func flatMapReleasesDeliveredEventsOutsideItsLock() {
        let pool = LeasePool()
        let first = PassthroughSubject<Lease, Never>()
        let second = PassthroughSubject<Lease, Never>()
        pool.token.token = Signal<Int, Never>(sequence: [0, 1])
            .flatMap { $0 == 0 ? first.signal : second.signal }
            .sink { lease in
                // While the first inner's value is delivered, the second inner sends two more:
                // they wait in flatMap's queue.
                guard lease.id == 0 else { return }
                second.send(pool.lease(1))
                second.send(pool.lease(2))
            }
        first.send(Lease(0))
        #expect(pool.returnedCount == 2)
    }

    // MARK: - Schedulers release cancelled actions

    @Test func testSchedulerReleasesACancelledActionOutsideItsLock() {
        let scheduler = TestScheduler()
        let lease = Lease(1) { _ in scheduler.schedule {} }
        let action = scheduler.schedule(after: .seconds(1)) { _ = lease }
        _ = consume lease
        action.cancel()
        #expect(scheduler.pendingCount == 1)
    }

    @Test func dispatchQueueReleasesACancelledActionOutsideItsLock() {
        let queue = DispatchQueue(label: "ReleaseOutsideLocksTests")
        let box = Locked<(any Cancellable)?>(nil)
        let released = Counter()
        let lease = Lease(1) { _ in
            released.increment()
            box.withLock { $0 }?.cancel()
        }
        let action = queue.schedule(after: .seconds(3600)) { _ = lease }
        box.withLock { $0 = action }
        _ = consume lease
        action.cancel()
        #expect(released.count == 1)
    }
}
