import Synchronization

/// A scheduler with virtual time, for deterministic tests of time-based behaviour.
///
/// Nothing runs until the test moves time forward with ``advance(by:)`` or ``run()``. A test of a
/// 30-second Retry-After wait finishes in microseconds and always behaves the same.
///
/// ```swift
/// let scheduler = TestScheduler()
/// let token = signal.delay(for: .seconds(30), on: scheduler).sink { … }
/// scheduler.advance(by: .seconds(29))   // nothing yet
/// scheduler.advance(by: .seconds(1))    // delivered
/// ```
///
/// Actions due at the same instant run in the order they were scheduled. Actions scheduled while
/// time advances run in the same call if they fall due within it. Actions run outside the
/// scheduler's lock, on the thread that advances time.
public final class TestScheduler: Scheduler {
    private struct Item {
        let id: UInt64
        let time: Duration
        let action: @Sendable () -> Void
    }

    private struct State {
        var now: Duration
        var nextID: UInt64 = 0
        /// Sorted by time, then by id (scheduling order).
        var items: [Item] = []
    }

    private let state: Mutex<State>

    /// Creates a scheduler whose clock starts at `now`.
    public init(now: Duration = .zero) {
        state = Mutex(State(now: now))
    }

    public var now: Duration {
        state.withLock { $0.now }
    }

    /// The number of actions waiting to run.
    public var pendingCount: Int {
        state.withLock { $0.items.count }
    }

    public func schedule(_ action: @escaping @Sendable () -> Void) {
        schedule(after: .zero, action)
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let id = state.withLock { state -> UInt64 in
            let id = state.nextID
            state.nextID += 1
            let time = state.now + max(delay, .zero)
            let index = state.items.firstIndex { $0.time > time } ?? state.items.endIndex
            state.items.insert(Item(id: id, time: time, action: action), at: index)
            return id
        }
        return ActionCancellable { [weak self] in
            self?.state.withLock { state in state.items.removeAll { $0.id == id } }
        }
    }

    /// Moves virtual time forward by `duration`, running every action that falls due, in order.
    public func advance(by duration: Duration = .zero) {
        let target = state.withLock { $0.now + max(duration, .zero) }
        while let item = takeNext(dueBy: target) {
            item.action()
        }
        state.withLock { state in state.now = max(state.now, target) }
    }

    /// Runs every scheduled action, including those scheduled meanwhile, moving time to each
    /// one's due time, until nothing is left. Stops after `limit` actions so that a repeating
    /// action cannot hang a test.
    public func run(limit: Int = 1_000_000) {
        var count = 0
        while count < limit, let item = takeNext(dueBy: nil) {
            item.action()
            count += 1
        }
    }

    private func takeNext(dueBy target: Duration?) -> Item? {
        state.withLock { state -> Item? in
            guard let first = state.items.first else { return nil }
            if let target, first.time > target { return nil }
            state.items.removeFirst()
            state.now = max(state.now, first.time)
            return first
        }
    }
}
