import Foundation
import Signals
import Synchronization
import Transit

/// A `TestScheduler` that also tells the test what was scheduled, so a test advances virtual time
/// exactly when the wait it expects has been scheduled — never before, never by sleeping.
final class ObservedScheduler: Scheduler {
    let base = TestScheduler()
    private let state = Mutex<(delays: [Duration], waiters: [(Duration, CheckedContinuation<Void, Never>)])>(([], []))

    var now: Duration { base.now }

    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let cancellable = base.schedule(after: delay, action)
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.delays.append(delay)
            let (matching, waiting) = (state.waiters.filter { $0.0 == delay }, state.waiters.filter { $0.0 != delay })
            state.waiters = waiting
            if !matching.isEmpty { state.delays.removeLast() }
            return matching.map(\.1)
        }
        ready.forEach { $0.resume() }
        return cancellable
    }

    /// Waits until an action `delay` from its time has been scheduled (one scheduled earlier and
    /// not waited for yet counts), then advances virtual time by `delay`.
    func advanceOnce(whenScheduled delay: Duration) async {
        await withCheckedContinuation { continuation in
            let found = state.withLock { state -> Bool in
                if let index = state.delays.firstIndex(of: delay) {
                    state.delays.remove(at: index)
                    return true
                }
                state.waiters.append((delay, continuation))
                return false
            }
            if found { continuation.resume() }
        }
        base.advance(by: delay)
    }
}

/// Records every event of a client.
final class EventLog: HTTPEventMonitor {
    private let events = Mutex<[HTTPEvent.Kind]>([])

    func receive(_ event: HTTPEvent) {
        events.withLock { $0.append(event.kind) }
    }

    /// How many token refreshes the client started.
    var refreshesStarted: Int {
        events.withLock { $0.filter { if case .credentialRenewalStarted = $0 { true } else { false } }.count }
    }

    /// How many retries the retry budget refused.
    var retriesRefusedByBudget: Int {
        events.withLock { $0.filter { if case .retryRefusedByBudget = $0 { true } else { false } }.count }
    }

    /// How many retries were scheduled.
    var retriesScheduled: Int {
        events.withLock { $0.filter { if case .retryScheduled = $0 { true } else { false } }.count }
    }
}
