import Signals

/// The total deadlines of one client's requests, timed by a few scheduler waits shared by all of
/// them instead of one wait per request.
///
/// A wait per request is costly on the hot path: a dispatch timer source costs more instructions
/// to create, arm and cancel than the rest of the client's work on a request, and an
/// `asyncAfter` cannot be withdrawn, so every finished request would leave its 300-second wait
/// queued (hundreds of thousands under load). Here a deadline is an entry in a table: adding and
/// removing one is a dictionary insert and delete under a lock. A scheduler wait is pending for
/// the earliest deadline; when it runs it expires what is due and waits for the next earliest.
/// Since requests usually end long before their deadline, that is about one wait per deadline
/// period, whatever the request rate.
///
/// Thread safety: the table is behind a `Locked`; the scheduler and the expiry actions are called
/// outside it (an expiry action may add or remove deadlines).
final class Deadlines: Sendable {
    private struct Entry {
        let deadline: Duration
        let expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        /// The times of the scheduler waits that have not run yet.
        var wakes: [Duration] = []
    }

    /// Where the deadlines are timed.
    let scheduler: any Scheduler
    private let state = Locked(State())

    init(scheduler: any Scheduler) {
        self.scheduler = scheduler
    }

    /// The number of deadlines not yet expired or removed.
    var count: Int {
        state.withLock { $0.entries.count }
    }

    /// Calls `expire` once `duration` has passed on the scheduler, unless ``remove(_:)`` is called
    /// with the returned identifier first.
    func add(after duration: Duration, _ expire: @escaping @Sendable () -> Void) -> UInt64 {
        let now = scheduler.now
        let deadline = now + duration
        let (id, needsWake) = state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID &+= 1
            state.entries[id] = Entry(deadline: deadline, expire: expire)
            // A pending wait at or before this deadline will look again when it runs.
            let needsWake = state.wakes.allSatisfy { $0 > deadline }
            if needsWake { state.wakes.append(deadline) }
            return (id, needsWake)
        }
        if needsWake { scheduleWake(at: deadline, after: duration) }
        return id
    }

    /// Forgets the deadline `id` (its request ended). Does nothing if it already expired.
    func remove(_ id: UInt64) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    private func scheduleWake(at time: Duration, after delay: Duration) {
        // Weak: a pending wait does not keep the table alive; if it is gone, so are its requests
        // (each one's teardown holds it).
        scheduler.schedule(after: delay) { [weak self] in self?.wake(at: time) }
    }

    /// A wait for `time` ran: expire every due deadline, and wait for the earliest one left.
    private func wake(at time: Duration) {
        let now = scheduler.now
        let (due, next) = state.withLock { state -> ([Entry], Duration?) in
            if let index = state.wakes.firstIndex(of: time) { state.wakes.remove(at: index) }
            var dueIDs: [UInt64] = []
            var earliest: Duration?
            for (id, entry) in state.entries {
                if entry.deadline <= now {
                    dueIDs.append(id)
                } else if earliest.map({ entry.deadline < $0 }) ?? true {
                    earliest = entry.deadline
                }
            }
            let due = dueIDs.compactMap { state.entries.removeValue(forKey: $0) }.sorted { $0.deadline < $1.deadline }
            guard let earliest, state.wakes.allSatisfy({ $0 > earliest }) else { return (due, nil) }
            state.wakes.append(earliest)
            return (due, earliest)
        }
        if let next { scheduleWake(at: next, after: next - now) }
        for entry in due { entry.expire() }
    }
}
