import Foundation
import Signals

/// Lets async code wait, bounded in real time, until a condition on some shared state holds,
/// waking on every change instead of polling. Whoever changes the state calls ``signal()``.
///
/// Thread safety: all state is behind a `Locked`; continuations are resumed outside it.
final class AsyncCondition: Sendable {
    private struct State {
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
    }

    private let state = Locked(State())

    /// Tells every waiter that the state changed, so it re-checks its condition.
    func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until `condition` is true, re-checking it after every ``signal()``. Returns `false`
    /// if `timeout` (real time) passed first or the task was cancelled.
    func waitUntil(timeout: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let generation = state.withLock { $0.generation }
            if condition() { return true }
            if ContinuousClock.now >= deadline || Task.isCancelled { return false }
            await waitForChange(after: generation, deadline: deadline)
        }
    }

    private func waitForChange(after generation: Int, deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        let timer = Task { [self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            resume(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.generation != generation || ContinuousClock.now >= deadline { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            resume(id)
        }
        timer.cancel()
    }

    private func resume(_ id: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }
}
