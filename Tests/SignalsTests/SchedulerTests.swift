import Dispatch
import Testing
@testable import Signals

@Suite struct DispatchQueueSchedulerTests {
    /// A weak reference to a scheduled action, as `schedule(after:)` returned it.
    private final class WeakAction: @unchecked Sendable {
        weak var action: (any Cancellable)?
        init(_ action: any Cancellable) { self.action = action }
    }

    /// `timeout(.seconds(3600))` over a million values schedules a million timers and cancels all
    /// but one: each cancelled timer must leave the queue when it is cancelled, not an hour later.
    /// The timer's handler holds the scheduled action object while the timer is queued, so the
    /// object being gone once the source reports its cancellation done shows that the queue let
    /// go of the timer.
    @Test func aCancelledTimerLeavesTheQueueWhenCancelledNotAtItsDeadline() async {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests")
        let watched = await withCheckedContinuation { (continuation: CheckedContinuation<WeakAction, Never>) in
            let box = Locked<WeakAction?>(nil)
            let action = DispatchTimerAction({}, on: queue, after: .seconds(3600)) {
                continuation.resume(returning: box.withLock { $0! })
            }
            box.withLock { $0 = WeakAction(action.scheduled) }
            action.cancel()
        }
        #expect(watched.action == nil)
    }

    @Test func aDelayedActionOnAQueueIsACancellableTimer() {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests.kind")
        let action = queue.schedule(after: .seconds(3600)) {}
        #expect(action is DispatchTimerAction)
        action.cancel()
    }

    /// A cancelled `DispatchQueue` wait is withdrawn, not left queued until its time: with
    /// `asyncAfter`, a one-hour wait (a request deadline, say) would keep its token for an hour
    /// after being cancelled, and thousands of them under load.
    @Test func aCancelledDispatchQueueWaitIsNotKeptUntilItsTime() {
        weak var wait: AnyObject?
        let ran = Locked(false)
        do {
            let token = DispatchQueue.global().schedule(after: .seconds(3600)) { ran.withLock { $0 = true } }
            wait = token
            token.cancel()
        }
        #expect(wait == nil)
        #expect(ran.withLock { $0 } == false)
    }

    /// Dropping the token of a `DispatchQueue` wait without cancelling it does not cancel it:
    /// the action still runs once, on the queue.
    @Test func aDispatchQueueWaitRunsOnceWhenItsTokenIsDropped() {
        let ran = DispatchSemaphore(value: 0)
        let count = Locked(0)
        do {
            _ = DispatchQueue.global().schedule(after: .milliseconds(5)) {
                count.withLock { $0 += 1 }
                ran.signal()
            }
        }
        // Generous: the wait is 5 ms; only a stalled machine takes more than 30 s.
        #expect(ran.wait(timeout: .now() + 30) == .success)
        #expect(count.withLock { $0 } == 1)
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
