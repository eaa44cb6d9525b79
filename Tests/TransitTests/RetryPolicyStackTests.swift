import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit

/// The address of a local variable of this (never inlined) function: a reading of how deep the
/// stack is where it is called. The stack grows down, so a deeper call reads a lower address.
@inline(never)
private func stackAddress() -> UInt {
    var marker: UInt8 = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}

/// Counts the instances alive, and the most that were alive at once.
private final class LiveCounter: Sendable {
    private let state = Locked<(live: Int, peak: Int, created: Int)>((0, 0, 0))
    var live: Int { state.withLock { $0.live } }
    var peak: Int { state.withLock { $0.peak } }
    var created: Int { state.withLock { $0.created } }
    func born() { state.withLock { $0.live += 1; $0.created += 1; $0.peak = max($0.peak, $0.live) } }
    func died() { state.withLock { $0.live -= 1 } }
}

/// An object a subscription to the upstream holds until its teardown is released.
private final class AttemptResource: Sendable {
    let counter: LiveCounter
    init(_ counter: LiveCounter) { self.counter = counter; counter.born() }
    deinit { counter.died() }
}

/// An upstream that fails with a timeout `failures` times, then sends `1` and finishes. Every
/// attempt holds an ``AttemptResource`` until the operator releases the attempt, records the
/// scheduler's pending actions, and the last one records the stack where the value is sent.
private struct FlakyUpstream {
    let attempts = AuthRetryBox(0)
    let counter = LiveCounter()
    let peakPending = AuthRetryBox(0)
    let sentAt = AuthRetryBox<UInt>(0)

    func signal(failures: Int, scheduler: TestScheduler) -> Signal<Int, any Error> {
        let attempts = self.attempts, counter = self.counter, peakPending = self.peakPending, sentAt = self.sentAt
        return Signal { observer in
            var number = 0
            attempts.mutate { $0 += 1; number = $0 }
            let pending = scheduler.pendingCount
            peakPending.mutate { $0 = max($0, pending) }
            let resource = AttemptResource(counter)
            if number <= failures {
                observer.fail(URLError(.timedOut))
            } else {
                sentAt.mutate { $0 = stackAddress() }
                observer.send(1)
                observer.finish()
            }
            return { withExtendedLifetime(resource) {} }
        }
    }
}

/// Defect: `retry(_ policy:)` nested one `catch` level per attempt, so after a few thousand
/// failed attempts the value of the attempt that finally succeeded was passed down through every
/// level (a stack overflow when the service came back), and memory grew with every attempt.
@Suite("retry(_ policy:) in constant stack and memory")
struct RetryPolicyStackTests {
    private static let policy = RetryPolicy(
        maxAttempts: .max, baseDelay: .milliseconds(1), multiplier: 1, maxDelay: .milliseconds(1), jitter: .none
    )

    /// Runs `failures` failed attempts and the successful one; returns how far below the
    /// upstream's `send` the downstream received the value, in bytes of stack.
    private func deliveryDepth(afterFailures failures: Int) throws -> UInt {
        let scheduler = TestScheduler()
        let upstream = FlakyUpstream()
        let receivedAt = AuthRetryBox<UInt>(0)
        let log = AuthRetryLog<Int>()
        let token = upstream.signal(failures: failures, scheduler: scheduler)
            .retry(Self.policy, method: .get, scheduler: scheduler)
            .handleEvents(receiveValue: { _ in receivedAt.mutate { $0 = stackAddress() } })
            .observe(log.observer)
        scheduler.run()
        #expect(log.values == [1])
        #expect(log.isFinished)
        #expect(upstream.attempts.current == failures + 1)
        withExtendedLifetime(token) {}
        let sent = upstream.sentAt.current, received = receivedAt.current
        try #require(sent > received)
        return sent - received
    }

    @Test("the value of the last attempt is delivered as deep in the stack after 1 000 failures as after 1")
    func deliveryDepthDoesNotGrowWithAttempts() throws {
        let shallow = try deliveryDepth(afterFailures: 1)
        let deep = try deliveryDepth(afterFailures: 1_000)
        #expect(deep <= shallow + 512, "delivered \(deep) bytes deep after 1 000 failures, \(shallow) after 1")
    }

    @Test("100 000 failed attempts in virtual time, then success: delivered, nothing piles up, everything released")
    func hundredThousandAttempts() throws {
        let failures = 100_000
        let scheduler = TestScheduler()
        let upstream = FlakyUpstream()
        let log = AuthRetryLog<Int>()
        let token = upstream.signal(failures: failures, scheduler: scheduler)
            .retry(Self.policy, method: .get, scheduler: scheduler)
            .observe(log.observer)
        // One wait at a time.
        #expect(scheduler.pendingCount == 1)
        scheduler.run(limit: failures + 10)
        #expect(log.values == [1])
        #expect(log.isFinished)
        #expect(log.terminalCount == 1)
        #expect(upstream.attempts.current == failures + 1)
        #expect(upstream.peakPending.current <= 1, "at most one scheduled wait at any time")
        #expect(upstream.counter.created == failures + 1)
        #expect(upstream.counter.peak <= 2, "attempts are released as they end, not kept")
        #expect(upstream.counter.live == 0)
        #expect(scheduler.pendingCount == 0)
        withExtendedLifetime(token) {}
    }

    @Test("a synchronous upstream on an immediate scheduler retries in a loop, not by recursion")
    func immediateSchedulerDoesNotRecurse() throws {
        let failures = 100_000
        let attempts = AuthRetryBox(0)
        let depths = AuthRetryBox<(first: UInt, deepest: UInt)>((0, .max))
        let log = AuthRetryLog<Int>()
        let upstream = Signal<Int, any Error> { observer in
            var number = 0
            attempts.mutate { $0 += 1; number = $0 }
            let here = stackAddress()
            depths.mutate { if $0.first == 0 { $0.first = here }; $0.deepest = min($0.deepest, here) }
            if number <= failures { observer.fail(URLError(.timedOut)) } else { observer.send(number); observer.finish() }
            return nil
        }
        let token = upstream.retry(Self.policy, method: .get, scheduler: ImmediateScheduler()).observe(log.observer)
        #expect(log.values == [failures + 1])
        #expect(attempts.current == failures + 1)
        let (first, deepest) = depths.current
        #expect(first - deepest <= 4096, "attempt \(failures + 1) subscribed \(first - deepest) bytes deeper than the first")
        withExtendedLifetime(token) {}
    }

    @Test("cancelling during a wait or during an attempt sends nothing more and releases everything")
    func cancellingReleasesEverything() {
        for cancelDuringAttempt in [false, true] {
            let scheduler = TestScheduler()
            let counter = LiveCounter()
            let attempts = AuthRetryBox(0)
            final class Sentinel: Sendable {}
            weak var weakSentinel: Sentinel?
            let log = AuthRetryLog<Int>()
            do {
                let sentinel = Sentinel()
                weakSentinel = sentinel
                // Each attempt fails after 1 s, unless cancelled first.
                let upstream = Signal<Int, any Error> { observer in
                    attempts.mutate { $0 += 1 }
                    let resource = AttemptResource(counter)
                    let failure = scheduler.schedule(after: .seconds(1)) {
                        withExtendedLifetime(sentinel) { observer.fail(URLError(.timedOut)) }
                    }
                    return { failure.cancel(); withExtendedLifetime(resource) {} }
                }
                let token = upstream.retry(Self.policy, method: .get, scheduler: scheduler).observe(log.observer)
                scheduler.advance(by: .seconds(1))      // attempt 1 failed; the wait is pending
                if cancelDuringAttempt { scheduler.advance(by: .milliseconds(1)) }  // attempt 2 running
                #expect(attempts.current == (cancelDuringAttempt ? 2 : 1))
                #expect(scheduler.pendingCount == 1)
                token.cancel()
            }
            #expect(scheduler.pendingCount == 0, "the wait or the attempt's timer was cancelled")
            scheduler.run()
            #expect(log.events.isEmpty)
            #expect(attempts.current == (cancelDuringAttempt ? 2 : 1))
            #expect(counter.live == 0)
            #expect(weakSentinel == nil, "nothing the chain created outlives it")
        }
    }

    @Test("concurrent failures, waits on a real queue and cancellation: at most one terminal event, none after cancel")
    func concurrentCancellation() async {
        let queue = DispatchQueue(label: "retry-policy-stress", attributes: .concurrent)
        let policy = RetryPolicy(maxAttempts: 50, baseDelay: .seconds(0), jitter: .none)
        for round in 0..<200 {
            let log = AuthRetryLog<Int>()
            let cancelled = AuthRetryBox(false)
            let afterCancel = AuthRetryBox(0)
            let upstream = Signal<Int, any Error> { observer in
                queue.async {
                    if round % 3 == 0 { observer.send(round) }
                    observer.fail(URLError(.networkConnectionLost))
                }
                return nil
            }
            let token = upstream.retry(policy, method: .get, scheduler: queue)
                .handleEvents(receiveValue: { _ in if cancelled.current { afterCancel.mutate { $0 += 1 } } })
                .observe(log.observer)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.asyncAfter(deadline: .now() + .microseconds(round % 50)) {
                    token.cancel()
                    cancelled.mutate { $0 = true }
                    continuation.resume()
                }
            }
            #expect(log.terminalCount <= 1)
            #expect(log.violations == 0)
            // An event whose delivery began before cancel() may still end; nothing starts later.
            #expect(afterCancel.current <= 1)
        }
    }
}
