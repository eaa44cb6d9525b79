import Dispatch
import Foundation
import Signals
import TransitTesting
import Synchronization
import Testing

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
        #expect(recorder.terminalCount == 1)
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
        #expect(recorder.terminalCount <= 1)
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
        #expect(recorder.terminalCount <= 1)
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

    // MARK: - Sources

    @Test func valueSendsOneValueThenFinishes() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(value: 1))
        #expect(recorder.events == [.value(1), .finished])
    }

    @Test func valueSendsNothingAfterTheSinkCancelsInsideTheValue() {
        let recorder = SignalRecorder<Int, Never>()
        let box = ContractTokenBox()
        let token = CancellationToken()
        box.token = token
        Signal(value: 1).observe(Observer { event in
            recorder.observer.send(event)
            box.cancel()
        }, in: token)
        #expect(recorder.events == [.value(1)])
    }

    @Test func sourcesSendNothingIntoACancelledScope() {
        let token = CancellationToken()
        token.cancel()
        let factoryRuns = Counter()
        let recorder = SignalRecorder<Int, TestError>()
        Signal(value: 1).observe(recorder.observer, in: token)
        Signal(error: TestError()).observe(recorder.observer, in: token)
        Signal.empty.observe(recorder.observer, in: token)
        Signal(sequence: [1, 2, 3]).observe(recorder.observer, in: token)
        Signal(result: .success(1)).observe(recorder.observer, in: token)
        Signal<Int, TestError>(deferred: {
            factoryRuns.increment()
            return Signal(value: 1)
        }).observe(recorder.observer, in: token)
        let teardowns = Counter()
        let generatorRuns = Counter()
        Signal<Int, TestError> { observer in
            generatorRuns.increment()
            observer.send(1)
            return { teardowns.increment() }
        }.observe(recorder.observer, in: token)
        #expect(recorder.events.isEmpty)
        #expect(factoryRuns.count == 0)
        #expect(generatorRuns.count == 0)
    }

    @Test func errorFailsAtOnce() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal(error: TestError(code: 3)))
        #expect(recorder.events == [.failed(TestError(code: 3))])
    }

    @Test func resultSendsItsValueOrItsError() {
        let success = SignalRecorder<Int, TestError>()
        success.subscribe(to: Signal(result: .success(4)))
        #expect(success.events == [.value(4), .finished])
        let failure = SignalRecorder<Int, TestError>()
        failure.subscribe(to: Signal(result: .failure(TestError(code: 4))))
        #expect(failure.events == [.failed(TestError(code: 4))])
    }

    @Test func emptyFinishesAndNeverSendsNothing() {
        let empty = SignalRecorder<Int, TestError>()
        empty.subscribe(to: .empty)
        #expect(empty.events == [.finished])
        let never = SignalRecorder<Int, TestError>()
        let token = never.subscribe(to: .never)
        token.cancel()
        token.cancel()
        #expect(never.events.isEmpty)
    }

    @Test func deferredRunsItsFactoryOnEverySubscriptionAndNotBefore() {
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        #expect(runs.count == 0)
        let first = SignalRecorder<Int, Never>()
        let second = SignalRecorder<Int, Never>()
        first.subscribe(to: signal)
        second.subscribe(to: signal)
        #expect(first.events == [.value(1), .finished])
        #expect(second.events == [.value(2), .finished])
    }

    @Test func tryDeferredFailsWithTheFactorysError() {
        let recorder = SignalRecorder<Int, any Error>()
        recorder.subscribe(to: Signal<Int, any Error>(tryDeferred: { throw TestError(code: 8) }))
        #expect(recorder.failure as? TestError == TestError(code: 8))
        #expect(recorder.terminalCount == 1)
    }

    @Test func sequenceSendsEveryElementThenFinishes() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2, 3]))
        #expect(recorder.events == [.value(1), .value(2), .value(3), .finished])
    }

    @Test func sequenceStopsIteratingWhenCancelledInsideAValue() {
        let pulled = Counter()
        let recorder = SignalRecorder<Int, Never>()
        let box = ContractTokenBox()
        let token = CancellationToken()
        box.token = token
        let endless = CountingSequence(pulled: pulled)
        Signal(sequence: endless).observe(Observer { event in
            recorder.observer.send(event)
            if case .value(3) = event { box.cancel() }
        }, in: token)
        #expect(recorder.events == [.value(1), .value(2), .value(3)])
        #expect(pulled.count == 3)
    }

    @Test func infiniteSequenceUnderFirstAndPrefixTerminates() {
        let first = SignalRecorder<Int, Never>()
        first.subscribe(to: Signal(sequence: 1...).first { $0 > 5 })
        #expect(first.events == [.value(6), .finished])
        let prefix = SignalRecorder<Int, Never>()
        prefix.subscribe(to: Signal(sequence: 1...).prefix(3))
        #expect(prefix.events == [.value(1), .value(2), .value(3), .finished])
    }

    @Test func generatorTeardownRunsOnceWhenItFinishesWhileSubscribing() {
        let teardowns = Counter()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal { observer in
            observer.send(1)
            observer.finish()
            observer.send(2)
            return { teardowns.increment() }
        })
        token.cancel()
        #expect(recorder.events == [.value(1), .finished])
        #expect(teardowns.count == 1)
    }

    @Test func generatorCancelledWhileSubscribingTearsDownOnceTheTeardownExists() {
        let teardowns = Counter()
        let box = ContractTokenBox()
        let token = CancellationToken()
        box.token = token
        let recorder = SignalRecorder<Int, Never>()
        Signal<Int, Never> { observer in
            // Cancelled from another thread before the teardown is returned.
            DispatchQueue.global().sync { box.cancel() }
            observer.send(1)
            return { teardowns.increment() }
        }.observe(recorder.observer, in: token)
        #expect(teardowns.count == 1)
        #expect(recorder.events.isEmpty)
        token.cancel()
        #expect(teardowns.count == 1)
    }

    @Test func operationSendsItsResultThenFinishes() async throws {
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>(operation: { 42 }))
        try await waitUntil { recorder.terminalCount == 1 }
        #expect(recorder.values == [42])
        #expect(recorder.completion.map { if case .finished = $0 { true } else { false } } == true)
        token.cancel()
    }

    @Test func operationThatThrowsFails() async throws {
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>(operation: { throw TestError(code: 6) }))
        try await waitUntil { recorder.terminalCount == 1 }
        #expect(recorder.failure as? TestError == TestError(code: 6))
        #expect(recorder.values.isEmpty)
        token.cancel()
    }

    @Test func nonFailingOperationSendsItsResult() async throws {
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal<Int, Never>(operation: { 7 }))
        try await waitUntil { recorder.terminalCount == 1 }
        #expect(recorder.events == [.value(7), .finished])
        token.cancel()
    }

    @Test func cancellingAnOperationCancelsItsTaskAndDeliversNothing() async throws {
        let started = Counter()
        let sawCancellation = Counter()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>(operation: {
            started.increment()
            do {
                // Long work that only ends when the task is cancelled.
                try await Task.sleep(for: .seconds(3600))
            } catch {
                sawCancellation.increment()
                throw error
            }
            return 1
        }))
        try await waitUntil { started.count == 1 }
        DispatchQueue.concurrentPerform(iterations: 4) { _ in token.cancel() }
        try await waitUntil { sawCancellation.count == 1 }
        #expect(recorder.events.isEmpty)
    }

    @Test func operationRunsAgainOnEverySubscription() async throws {
        let runs = Counter()
        let signal = Signal<Int, any Error>(operation: { runs.increment() })
        let first = SignalRecorder<Int, any Error>()
        let second = SignalRecorder<Int, any Error>()
        let tokens = [first.subscribe(to: signal), second.subscribe(to: signal)]
        try await waitUntil { first.terminalCount == 1 && second.terminalCount == 1 }
        #expect(runs.count == 2)
        #expect(Set(first.values + second.values) == [1, 2])
        tokens.forEach { $0.cancel() }
    }

    // MARK: - Operators: what each one sends

    @Test func mapTransformsValuesAndPassesTerminals() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(sequence: [1, 2]).map { $0 * 10 })
        #expect(recorder.events == [.value(10), .value(20), .finished])
        let failed = SignalRecorder<Int, TestError>()
        failed.subscribe(to: Signal<Int, TestError>(error: TestError(code: 2)).map { $0 * 10 })
        #expect(failed.events == [.failed(TestError(code: 2))])
    }

    @Test func compactMapAndFilterDropValues() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: 1...6).compactMap { $0 % 3 == 0 ? nil : $0 }.filter { $0 % 2 == 0 })
        #expect(recorder.events == [.value(2), .value(4), .finished])
    }

    @Test func mapErrorTransformsTheFailure() {
        let recorder = SignalRecorder<Int, TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(error: TestError(code: 1)).mapError { TestError(code: $0.code + 1) })
        #expect(recorder.events == [.failed(TestError(code: 2))])
    }

    @Test func tryMapThrowingCancelsTheUpstreamAndFails() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: probe.signal.tryMap { value -> Int in
            if value == 2 { throw TestError(code: 22) }
            return value
        })
        probe.send(.value(1))
        #expect(probe.teardowns == 0)
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.values == [1])
        #expect(recorder.failure as? TestError == TestError(code: 22))
        #expect(recorder.terminalCount == 1)
        token.cancel()
        #expect(probe.teardowns == 1)
    }

    @Test func catchSwitchesToTheHandlersSignalOnce() {
        let handled = Counter()
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError())
            return nil
        }.catch { _ in
            handled.increment()
            return Signal(sequence: [8, 9])
        })
        #expect(recorder.events == [.value(1), .value(8), .value(9), .finished])
        #expect(handled.count == 1)
    }

    @Test func catchTearsDownTheFailedUpstreamBeforeTheReplacementRuns() {
        let probe = ContractProbe<Int, TestError>()
        let replacement = ContractProbe<Int, Never>()
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: probe.signal.catch { _ in replacement.signal })
        probe.send(.failed(TestError()))
        #expect(probe.teardowns == 1)
        #expect(replacement.subscriptions == 1)
        replacement.send(.value(5))
        token.cancel()
        #expect(replacement.teardowns == 1)
        #expect(recorder.events == [.value(5)])
    }

    @Test func tryCatchReRunsTheUpstreamsWorkOnEveryAttempt() {
        let work = Counter()
        let upstream = Signal<Int, TestError>(deferred: {
            let attempt = work.increment()
            return attempt < 3 ? Signal(error: TestError(code: attempt)) : Signal(value: attempt)
        })
        let recorder = SignalRecorder<Int, any Error>()
        // Each handler call returns the upstream again, which runs its work again.
        recorder.subscribe(to: upstream.tryCatch { _ in upstream }.tryCatch { _ in upstream.eraseError() })
        #expect(work.count == 3)
        #expect(recorder.values == [3])
        #expect(recorder.terminalCount == 1)
    }

    @Test func tryCatchFailsWithWhatTheHandlerThrows() {
        let recorder = SignalRecorder<Int, any Error>()
        recorder.subscribe(to: Signal<Int, TestError>(error: TestError(code: 1)).tryCatch { error -> Signal<Int, TestError> in
            throw TestError(code: error.code + 40)
        })
        #expect(recorder.failure as? TestError == TestError(code: 41))
        #expect(recorder.terminalCount == 1)
    }

    @Test func tryCatchMatchingAnErrorHandlesOnlyThatError() {
        let work = Counter()
        let upstream = Signal<Int, TestError>(deferred: {
            Signal(error: TestError(code: work.increment()))
        })
        let matched = SignalRecorder<Int, TestError>()
        matched.subscribe(to: upstream.tryCatch(TestError(code: 1)) { _ in upstream })
        // Attempt 1 failed with code 1 (handled: the upstream's work runs again), attempt 2 with
        // code 2, which does not match and passes through.
        #expect(work.count == 2)
        #expect(matched.events == [.failed(TestError(code: 2))])
    }

    @Test func replaceErrorAndMapToResult() {
        let replaced = SignalRecorder<Int, Never>()
        replaced.subscribe(to: Signal<Int, TestError>(error: TestError()).replaceError(with: -1))
        #expect(replaced.events == [.value(-1), .finished])
        let emptied = SignalRecorder<Int, Never>()
        emptied.subscribe(to: Signal<Int, TestError>(error: TestError()).replaceErrorWithEmpty())
        #expect(emptied.events == [.finished])
        let results = SignalRecorder<Result<Int, TestError>, Never>()
        results.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError(code: 9))
            return nil
        }.mapToResult())
        #expect(results.events == [.value(.success(1)), .value(.failure(TestError(code: 9))), .finished])
    }

    @Test func retryReRunsTheUpstreamsWorkAndTearsDownEveryAttemptOnce() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.retry(3))
        probe.send(.value(1))
        probe.send(.failed(TestError(code: 1)))
        probe.send(.failed(TestError(code: 2)))
        #expect(probe.subscriptions == 3)
        #expect(probe.teardowns == 2)
        probe.send(.value(2))
        probe.send(.finished)
        #expect(recorder.events == [.value(1), .value(2), .finished])
        #expect(probe.teardowns == 3)
        token.cancel()
        #expect(probe.teardowns == 3)
    }

    @Test func retryIfPassesOtherFailuresThrough() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.retry(5) { $0.code == 1 })
        probe.send(.failed(TestError(code: 1)))
        probe.send(.failed(TestError(code: 2)))
        #expect(probe.subscriptions == 2)
        #expect(recorder.events == [.failed(TestError(code: 2))])
        withExtendedLifetime(token) {}
    }

    @Test func cancellingDuringARetryStopsRetrying() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let box = ContractTokenBox()
        box.token = probe.signal.retry(10) { _ in
            box.cancel()
            return true
        }.observe(recorder.observer)
        probe.send(.failed(TestError()))
        #expect(probe.subscriptions == 1)
        #expect(probe.teardowns == 1)
        #expect(recorder.events.isEmpty)
    }

    @Test func firstSendsTheFirstMatchThenFinishesAndCancelsTheUpstream() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.first { $0 > 1 })
        probe.send(.value(1))
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.events == [.value(2), .finished])
        let empty = SignalRecorder<Int, Never>()
        empty.subscribe(to: Signal<Int, Never>.empty.first())
        #expect(empty.events == [.finished])
        withExtendedLifetime(token) {}
    }

    @Test func prefixSendsAtMostCountValues() {
        let probe = ContractProbe<Int, TestError>()
        let recorder = SignalRecorder<Int, TestError>()
        let token = recorder.subscribe(to: probe.signal.prefix(2))
        probe.send(.value(1))
        probe.send(.value(2))
        #expect(probe.teardowns == 1)
        probe.send(.value(3))
        #expect(recorder.events == [.value(1), .value(2), .finished])
        let none = SignalRecorder<Int, TestError>()
        none.subscribe(to: probe.signal.prefix(0))
        #expect(none.events == [.finished])
        #expect(probe.subscriptions == 1)
        withExtendedLifetime(token) {}
    }

    @Test func collectSendsOneArrayOnFinishAndNothingOnFailure() {
        let recorder = SignalRecorder<[Int], TestError>()
        recorder.subscribe(to: Signal<Int, TestError>(sequence: [1, 2, 3]).collect())
        #expect(recorder.events == [.value([1, 2, 3]), .finished])
        let failed = SignalRecorder<[Int], TestError>()
        failed.subscribe(to: Signal<Int, TestError> { observer in
            observer.send(1)
            observer.fail(TestError(code: 3))
            return nil
        }.collect())
        #expect(failed.events == [.failed(TestError(code: 3))])
    }

    @Test func decodeDecodesAndFailsWithTheDecodingError() {
        struct Item: Decodable, Equatable { var id: Int }
        let decoded = SignalRecorder<Item, any Error>()
        decoded.subscribe(to: Signal<Data, Never>(value: Data(#"{"id": 4}"#.utf8)).decode(Item.self, decoder: JSONDecoder()))
        #expect(decoded.values == [Item(id: 4)])
        #expect(decoded.terminalCount == 1)

        let probe = ContractProbe<Data, Never>()
        let failed = SignalRecorder<Item, any Error>()
        let token = failed.subscribe(to: probe.signal.decode(Item.self, decoder: JSONDecoder()))
        probe.send(.value(Data("{".utf8)))
        #expect(failed.failure is DecodingError)
        #expect(probe.teardowns == 1)
        probe.send(.value(Data(#"{"id": 1}"#.utf8)))
        #expect(failed.events.count == 1)
        withExtendedLifetime(token) {}
    }

    @Test func handleEventsRunsItsCallbacksInOrder() {
        let log = Locked<[String]>([])
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(sequence: [1, 2]).handleEvents(
            receiveSubscription: { log.withLock { $0.append("subscription") } },
            receiveValue: { value in log.withLock { $0.append("value \(value)") } },
            receiveCompletion: { _ in log.withLock { $0.append("completion") } },
            receiveCancel: { log.withLock { $0.append("cancel") } }
        ))
        #expect(log.withLock { $0 } == ["subscription", "value 1", "value 2", "completion"])
        #expect(recorder.events == [.value(1), .value(2), .finished])
    }

    @Test func handleEventsReportsCancelOnceFromManyThreadsAndNotAfterCompletion() {
        let cancels = Counter()
        let probe = ContractProbe<Int, Never>()
        let token = probe.signal.handleEvents(receiveCancel: { cancels.increment() }).sink { _ in }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in token.cancel() }
        #expect(cancels.count == 1)
        #expect(probe.teardowns == 1)

        let finished = probe.signal.handleEvents(receiveCancel: { cancels.increment() }).sink { _ in }
        probe.send(.finished)
        finished.cancel()
        #expect(cancels.count == 1)
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

/// 1, 2, 3, … forever, counting the elements pulled.
private struct CountingSequence: Sequence, Sendable {
    let pulled: Counter

    struct Iterator: IteratorProtocol {
        let pulled: Counter
        mutating func next() -> Int? { pulled.increment() }
    }

    func makeIterator() -> Iterator { Iterator(pulled: pulled) }
}

/// Waits until `condition` holds, checking it as other tasks make progress. Fails after ten
/// seconds, so a broken condition fails the test instead of hanging it.
func waitUntil(_ condition: @Sendable () -> Bool) async throws {
    // Far above what any condition needs, like `within`'s bound.
    let deadline = ContinuousClock.now.advanced(by: .seconds(90))
    while !condition() {
        try #require(ContinuousClock.now < deadline, "condition not met in time")
        await Task.yield()
    }
}
