import Synchronization

/// A scheduler with virtual time, for deterministic tests of time-based behaviour.
///
/// Nothing runs until the test moves time forward with ``advance(by:)`` or ``run(limit:)``. A test of a
/// 30-second Retry-After wait finishes in microseconds and always behaves the same.
///
/// ```swift
/// let scheduler = TestScheduler()
/// let token = signal.delay(for: .seconds(30), scheduler: scheduler).sink { … }
/// scheduler.advance(by: .seconds(29))   // nothing yet
/// scheduler.advance(by: .seconds(1))    // delivered
/// ```
///
/// Actions due at the same instant run in the order they were scheduled. Actions scheduled while
/// time advances run in the same call if they fall due within it. Actions run outside the
/// scheduler's lock, on the thread that advances time.
public final class TestScheduler: Scheduler {
    /// A scheduled action's place in the queue: its due time and its scheduling order.
    private struct Entry {
        let time: Duration
        let id: UInt64

        /// Runs before `other`: due earlier, or due at the same time and scheduled earlier.
        func precedes(_ other: Entry) -> Bool {
            time < other.time || (time == other.time && id < other.id)
        }
    }

    private struct State {
        var now: Duration
        var nextID: UInt64 = 0
        /// A binary min-heap of due times. A cancelled action leaves its entry behind (its
        /// action is gone from `actions`); such entries are skipped when they come up, and
        /// swept out once they outnumber the live ones.
        var heap = EntryHeap()
        /// The actions still to run, by id. Cancelling removes one in constant time.
        var actions: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state: Locked<State>

    /// Creates a scheduler whose clock starts at `now`.
    public init(now: Duration = .zero) {
        state = Locked(State(now: now))
    }

    public var now: Duration {
        state.withLock { $0.now }
    }

    /// The number of actions waiting to run.
    public var pendingCount: Int {
        state.withLock { $0.actions.count }
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let id = state.withLock { state -> UInt64 in
            let id = state.nextID
            state.nextID += 1
            state.heap.push(Entry(time: state.now + max(delay, .zero), id: id))
            state.actions[id] = action
            return id
        }
        return ActionCancellable { [weak self] in self?.cancel(id) }
    }

    /// Forgets the action `id`; it is released after the lock (its captures' `deinit` may
    /// schedule again).
    private func cancel(_ id: UInt64) {
        let removed = state.withLock { state -> (@Sendable () -> Void)? in
            let removed = state.actions.removeValue(forKey: id)
            if state.heap.count > 64, state.heap.count > 2 * state.actions.count {
                state.heap.removeAll { state.actions[$0.id] == nil }
            }
            return removed
        }
        _ = removed
    }

    /// Moves virtual time forward by `duration`, running every action that falls due, in order.
    public func advance(by duration: Duration = .zero) {
        let target = state.withLock { $0.now + max(duration, .zero) }
        while let action = takeNext(dueBy: target) {
            action()
        }
        state.withLock { state in state.now = max(state.now, target) }
    }

    /// Runs every scheduled action, including those scheduled meanwhile, moving time to each
    /// one's due time, until nothing is left. Stops after `limit` actions so that a repeating
    /// action cannot hang a test.
    public func run(limit: Int = 1_000_000) {
        var count = 0
        while count < limit, let action = takeNext(dueBy: nil) {
            action()
            count += 1
        }
    }

    private func takeNext(dueBy target: Duration?) -> (@Sendable () -> Void)? {
        state.withLock { state -> (@Sendable () -> Void)? in
            while let first = state.heap.first {
                guard state.actions[first.id] != nil else {
                    state.heap.popFirst()
                    continue
                }
                if let target, first.time > target { return nil }
                state.heap.popFirst()
                state.now = max(state.now, first.time)
                return state.actions.removeValue(forKey: first.id)
            }
            return nil
        }
    }

    /// A binary min-heap of entries, ordered by ``Entry/precedes(_:)``.
    private struct EntryHeap {
        private var entries: [Entry] = []

        var count: Int { entries.count }
        var first: Entry? { entries.first }

        mutating func push(_ entry: Entry) {
            entries.append(entry)
            var child = entries.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard entries[child].precedes(entries[parent]) else { break }
                entries.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() {
            guard !entries.isEmpty else { return }
            entries.swapAt(0, entries.count - 1)
            entries.removeLast()
            siftDown(from: 0)
        }

        /// Removes every entry for which `shouldRemove` is `true`, then restores the heap order.
        mutating func removeAll(where shouldRemove: (Entry) -> Bool) {
            entries.removeAll(where: shouldRemove)
            for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
        }

        private mutating func siftDown(from start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1
                guard left < entries.count else { return }
                var smallest = left
                let right = left + 1
                if right < entries.count, entries[right].precedes(entries[left]) { smallest = right }
                guard entries[smallest].precedes(entries[parent]) else { return }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
