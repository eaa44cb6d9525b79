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
    /// A timer's handler keeps its action object alive while the timer is armed, so the object
    /// being gone once the source reports its cancellation done shows that the queue let go.
    @Test func aCancelledTimerLeavesTheQueueWhenCancelledNotAtItsDeadline() async {
        let queue = DispatchQueue(label: "DispatchQueueSchedulerTests")
        let watched = await withCheckedContinuation { (continuation: CheckedContinuation<WeakAction, Never>) in
            let box = Locked<WeakAction?>(nil)
            let action = DispatchTimerAction({}, on: queue, after: .seconds(3600)) {
                continuation.resume(returning: box.withLock { $0! })
            }
            box.withLock { $0 = WeakAction(action) }
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
