import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

/// Pins every line of the Signals contract (DESIGN.md) for the core sources and operators:
/// at most one terminal event; nothing after a terminal event or a cancellation, even when the
/// producer keeps sending from other threads; cancelling from any thread, any number of times,
/// reaches the teardown exactly once; retrying re-runs the upstream's work; no lock is held while
/// user code runs, so re-entrant sinks and closures never deadlock.
@Suite(.timeLimit(.minutes(1)))
struct ContractTests {
    static let failure = ContractOperatorCase.failure

    // MARK: - The contract, for every operator

    @Test(arguments: ContractOperatorCase.all)
    func oneTerminalAndNothingAfterItWhenFinished(_ operation: ContractOperatorCase) {
        checkTerminalThenFlood(operation, terminal: .finished)
    }

    @Test(arguments: ContractOperatorCase.all)
    func oneTerminalAndNothingAfterItWhenFailed(_ operation: ContractOperatorCase) {
        checkTerminalThenFlood(operation, terminal: .failed(Self.failure))
    }

    private func checkTerminalThenFlood(_ operation: ContractOperatorCase, terminal: Event<Int, TestError>) {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<String, any Error>()
        let (signal, canary) = operation.apply(probe.signal)
        let token = recorder.subscribe(to: signal)
        canary.settle()
        probe.send(.value(1))
        probe.send(.value(2))
        probe.terminateAll(with: terminal, settle: canary.settle)
        let delivered = recorder.events.count
        #expect(recorder.events.filter(\.isTerminal).count == 1)
        #expect(recorder.events.last?.isTerminal == true)

        // The producer keeps sending, from several threads, to every subscription it ever had.
        probe.flood(values: [7, 8, 9], terminals: [.finished, .failed(TestError(code: 5))])
        canary.settle()
        #expect(recorder.events.count == delivered)
        #expect(recorder.violations == 0)
        #expect(probe.everyTeardownRanOnce)
        token.cancel()
        #expect(probe.everyTeardownRanOnce)
        #expect(canary.scheduler.pendingCount == 0, "a scheduled action outlived the subscription")
    }

    @Test(arguments: ContractOperatorCase.all)
    func nothingAfterCancelAndTeardownRunsOnce(_ operation: ContractOperatorCase) {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<String, any Error>()
        let (signal, canary) = operation.apply(probe.signal)
        let token = recorder.subscribe(to: signal)
        canary.settle()
        probe.send(.value(1))
        // Cancel from many threads, many times each (with events still waiting on the scheduler).
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10 { token.cancel() }
        }
        let delivered = recorder.events.count
        probe.flood(values: [7, 8, 9], terminals: [.finished, .failed(Self.failure)])
        probe.terminateAll(with: .failed(Self.failure), settle: canary.settle)
        #expect(recorder.events.count == delivered)
        #expect(recorder.events.filter(\.isTerminal).count <= 1)
        #expect(recorder.violations == 0)
        #expect(probe.everyTeardownRanOnce)
        #expect(canary.scheduler.pendingCount == 0, "a scheduled action outlived the subscription")
    }

    @Test(arguments: ContractOperatorCase.all)
    func sinkCancellingItselfInsideAValueGetsNothingMore(_ operation: ContractOperatorCase) {
        for terminal in [Event<Int, TestError>.finished, .failed(Self.failure)] {
            let probe = ContractProbe<Int, TestError>()
            let recorder = SignalRecorder<String, any Error>()
            let box = ContractTokenBox()
            let (signal, canary) = operation.apply(probe.signal)
            // The token exists before the subscription starts, so a value sent while subscribing
            // can cancel it too.
            let token = CancellationToken()
            box.token = token
            signal.observe(Observer { event in
                recorder.observer.send(event)
                if case .value = event { box.cancel() }
            }, in: token)
            canary.settle()
            probe.send(.value(1))
            probe.send(.value(2))
            probe.terminateAll(with: terminal, settle: canary.settle)
            probe.flood(values: [7], terminals: [.finished])
            canary.settle()
            // One value, then the sink cancelled: nothing else, not even a terminal event.
            // (`prefix(0)` finishes while subscribing, before there is anything to cancel.)
            #expect(recorder.events.count <= 1, "\(recorder.events)")
            #expect(probe.everyTeardownRanOnce)
        }
    }

    @Test(arguments: ContractOperatorCase.all)
    func reentrantSendsAreQueuedNeverNested(_ operation: ContractOperatorCase) {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<String, any Error>()
        let depth = Locked((current: 0, deepest: 0, reentered: false))
        let (signal, canary) = operation.apply(probe.signal)
        let token = signal.observe(Observer { event in
            depth.withLock { $0.current += 1; $0.deepest = max($0.deepest, $0.current) }
            recorder.observer.send(event)
            // Re-enter the same producer from inside the callback: must neither deadlock nor
            // deliver the new event before this callback returns.
            let reenter = depth.withLock { state -> Bool in
                defer { state.reentered = true }
                return !state.reentered
            }
            if reenter {
                probe.send(.value(2))
                probe.send(.value(3))
                canary.settle()
            }
            depth.withLock { $0.current -= 1 }
        })
        canary.settle()
        probe.send(.value(1))
        canary.settle()
        probe.terminateAll(with: .finished, settle: canary.settle)
        #expect(depth.withLock { $0.deepest } <= 1)
        #expect(recorder.events.filter(\.isTerminal).count <= 1)
        #expect(recorder.violations == 0)
        token.cancel()
        #expect(probe.everyTeardownRanOnce)
    }

    @Test(arguments: ContractOperatorCase.all)
    func releasingTheTokenCancelsTheChain(_ operation: ContractOperatorCase) {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<String, any Error>()
        let (signal, canary) = operation.apply(probe.signal)
        do {
            let token = recorder.subscribe(to: signal)
            canary.settle()
            probe.send(.value(1))
            withExtendedLifetime(token) {}
        }
        let delivered = recorder.events.count
        probe.flood(values: [7], terminals: [.finished])
        canary.settle()
        #expect(recorder.events.count == delivered)
        #expect(probe.everyTeardownRanOnce)
        #expect(canary.scheduler.pendingCount == 0, "a scheduled action outlived the subscription")
    }

    // MARK: - No lock is held while user code runs

    /// Every user closure below cancels the subscription it runs in; a lock held around user code
    /// would deadlock (and the time limit would fail the test). The event the closure was
    /// handling is in flight and may still arrive; nothing after it may.
    @Test func operatorClosuresMayCancelTheirOwnSubscription() {
        typealias Build = @Sendable (Signal<Int, TestError>, @escaping @Sendable () -> Void) -> Signal<String, any Error>
        let cases: [(String, Build)] = [
            ("map", { up, cancel in up.map { cancel(); return "\($0)" }.eraseError() }),
            ("compactMap", { up, cancel in up.compactMap { cancel(); return "\($0)" }.eraseError() }),
            ("filter", { up, cancel in up.filter { _ in cancel(); return true }.map { "\($0)" }.eraseError() }),
            ("tryMap", { up, cancel in up.tryMap { cancel(); return "\($0)" } }),
            ("mapError", { up, cancel in up.mapError { _ in cancel(); return TestError() }.map { "\($0)" }.eraseError() }),
            ("catch", { up, cancel in up.catch { _ in cancel(); return up }.map { "\($0)" }.eraseError() }),
            ("tryCatch", { up, cancel in up.tryCatch { _ in cancel(); return up }.map { "\($0)" } }),
            ("tryCatch(error)", { up, cancel in up.tryCatch(TestError()) { _ in cancel(); return up }.map { "\($0)" }.eraseError() }),
            ("retry(if:)", { up, cancel in up.retry(3) { _ in cancel(); return true }.map { "\($0)" }.eraseError() }),
            ("first(where:)", { up, cancel in up.first { _ in cancel(); return true }.map { "\($0)" }.eraseError() }),
            ("handleEvents value", { up, cancel in up.handleEvents(receiveValue: { _ in cancel() }).map { "\($0)" }.eraseError() }),
            ("handleEvents completion", { up, cancel in
                up.handleEvents(receiveCompletion: { _ in cancel() }).map { "\($0)" }.eraseError()
            }),
            ("handleEvents subscription", { up, cancel in
                up.handleEvents(receiveSubscription: { cancel() }).map { "\($0)" }.eraseError()
            }),
        ]
        for (name, build) in cases {
            let probe = ContractProbe<Int, TestError>()
            let recorder = SignalRecorder<String, any Error>()
            let box = ContractTokenBox()
            let deliveredAtCancel = Locked<Int?>(nil)
            let signal = build(probe.signal) {
                deliveredAtCancel.withLock { $0 = $0 ?? recorder.events.count }
                box.cancel()
            }
            // Subscribe within a token the box already holds, so a closure that runs while
            // subscribing can cancel it too.
            let token = CancellationToken()
            box.token = token
            signal.observe(recorder.observer, in: token)
            probe.send(.value(1))
            probe.send(.failed(TestError()))
            probe.terminateAll(with: .failed(TestError()))
            probe.flood(values: [5], terminals: [.finished])
            let cancelledAt = deliveredAtCancel.withLock { $0 }
            #expect(cancelledAt != nil, "\(name): the closure never ran")
            #expect(recorder.events.count - (cancelledAt ?? 0) <= 1, "\(name): \(recorder.events)")
            #expect(recorder.violations == 0, "\(name)")
            #expect(probe.teardowns == probe.subscriptions, "\(name)")
        }
    }

    @Test func handleEventsCancelCallbackMayCancelAgain() {
        let box = ContractTokenBox()
        let cancels = Counter()
        let probe = ContractProbe<Int, Never>()
        box.token = probe.signal.handleEvents(receiveCancel: {
            cancels.increment()
            box.cancel()
        }).sink { _ in }
        box.cancel()
        #expect(cancels.count == 1)
        #expect(probe.teardowns == 1)
    }

    @Test func closuresMaySubscribeToTheSameSignalAgain() {
        let probe = ContractProbe<Int, Never>()
        let inner = SignalRecorder<Int, Never>()
        let tokens = Locked<[CancellationToken]>([])
        let outer = SignalRecorder<Int, Never>()
        let token = outer.subscribe(to: probe.signal.map { value in
            if value == 1 { tokens.withLock { $0.append(inner.subscribe(to: probe.signal)) } }
            return value
        })
        probe.observers.first?.send(1)
        probe.broadcast(.value(2))
        #expect(outer.values == [1, 2])
        #expect(inner.values == [2])
        token.cancel()
        tokens.withLock { $0.forEach { $0.cancel() } }
        #expect(probe.teardowns == 2)
    }
}
