import Dispatch
import Signals
import Testing

@Suite struct DispatchQueueSchedulerTests {
    /// A weak reference to a scheduled action, as `schedule(after:)` returned it.
    private final class WeakAction: @unchecked Sendable {
        weak var action: (any Cancellable)?
        init(_ action: any Cancellable) { self.action = action }
    }

    /// `timeout(.seconds(3600))` over a million values schedules a million timers and cancels all
    /// but one: each cancelled timer must leave the queue when it is cancelled, not an hour later.
    /// The queue keeps the action it will run alive while the timer is queued, so the action
    /// being released after `cancel()` shows that the queue let go of it.
    @Test func aCancelledTimerLeavesTheQueueWhenCancelledNotAtItsDeadline() {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests")
        var action: (any Cancellable)? = queue.schedule(after: .seconds(3600)) {}
        let watched = WeakAction(action!)
        action?.cancel()
        action = nil
        // The queue processes the cancellation asynchronously: let it run, a bounded number of
        // times (no sleeping: each round waits for the queue to be idle).
        for _ in 0..<1_000 where watched.action != nil { queue.sync {} }
        #expect(watched.action == nil)
    }

    @Test func aTimerRunsItsActionOnceAfterItsDelay() async {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests.run")
        let runs = Counter()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.schedule(after: .milliseconds(1)) {
                runs.increment()
                continuation.resume()
            }
        }
        queue.sync {}
        #expect(runs.count == 1)
    }

    @Test func aZeroDelayRunsAsSoonAsTheQueueDoes() async {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests.zero")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.schedule(after: .zero) { continuation.resume() }
        }
    }
}
