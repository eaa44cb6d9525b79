import Dispatch
import Signals
import Testing

@Suite
struct FirstValueTests {
    // MARK: firstValue

    @Test func firstValueReturnsTheFirstValueAndCancelsTheSubscription() async throws {
        let source = ManualSource<Int, TestError>()
        let task = Task { try await source.signal.firstValue() }
        await source.waitForSubscription()
        source.send(7)
        source.send(8)
        #expect(try await within { try await task.value } == 7)
        #expect(source.teardowns == 1)
        #expect(source.liveSubscriptions == 0)
    }

    @Test func firstValueOfASynchronousSignal() async throws {
        #expect(try await Signal<Int, Never>(sequence: [3, 4, 5]).firstValue() == 3)
    }

    @Test func firstValueThrowsTheFailure() async {
        await #expect(throws: TestError(code: 6)) {
            try await Signal<Int, TestError>(error: TestError(code: 6)).firstValue()
        }
    }

    @Test func firstValueThrowsNoValueErrorWhenTheSignalFinishesEmpty() async {
        await #expect(throws: NoValueError()) { try await Signal<Int, Never>.empty.firstValue() }
        await #expect(throws: NoValueError()) { try await Signal<Int, TestError>.empty.firstValue() }
        #expect(NoValueError().description.contains("without sending a value"))
    }

    @Test func cancellingFirstValueWhileWaitingThrowsAndReleasesTheSubscription() async throws {
        for round in 0..<50 {
            let source = ManualSource<Int, Never>()
            let task = Task { try await source.signal.firstValue() }
            await source.waitForSubscription()
            for _ in 0..<(round % 5) { await Task.yield() }
            task.cancel()
            let result = try await within { await task.result }
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(source.teardowns == 1)
            #expect(source.liveSubscriptions == 0)
        }
    }

    @Test func firstValueInACancelledTaskNeverSubscribes() async throws {
        let source = ManualSource<Int, Never>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await source.signal.firstValue()
        }
        let result = try await within { await task.result }
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(source.subscriptions == 0)
    }

    @Test func firstValueSubscribesAgainEveryCall() async throws {
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        #expect(try await signal.firstValue() == 1)
        #expect(try await signal.firstValue() == 2)
    }

    @Test func firstValueWaitsForATimerInVirtualTime() async throws {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, Never>()
        let task = Task { try await source.signal.delay(for: .seconds(30), scheduler: scheduler).firstValue() }
        await source.waitForSubscription()
        source.send(1)
        scheduler.advance(by: .seconds(30))
        #expect(try await within { try await task.value } == 1)
    }

    @Test func aTimeoutFailsTheAwait() async throws {
        let scheduler = TestScheduler()
        let source = ManualSource<Int, any Error>()
        let task = Task { try await source.signal.timeout(.seconds(5), scheduler: scheduler).firstValue() }
        await source.waitForSubscription()
        scheduler.advance(by: .seconds(5))
        let result = try await within { await task.result }
        #expect(throws: TimeoutError(interval: .seconds(5))) { try result.get() }
        #expect(source.teardowns == 1)
    }

    // MARK: races

    /// Values sent from other threads race with task cancellation: every await ends (with the
    /// value or with `CancellationError`), and every subscription is torn down.
    @Test func cancellationRacingDeliveryNeverHangs() async throws {
        let teardowns = Counter()
        let subscriptions = Counter()
        let signal = Signal<Int, Never> { observer in
            subscriptions.increment()
            DispatchQueue.global().async {
                observer.send(1)
                observer.finish()
            }
            return { teardowns.increment() }
        }
        try await within {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<300 {
                    let task = Task { try await signal.firstValue() }
                    if index.isMultiple(of: 2) { task.cancel() }
                    group.addTask {
                        switch await task.result {
                        case .success(let value): #expect(value == 1)
                        case .failure(let error): #expect(error is CancellationError)
                        }
                    }
                }
            }
        }
        #expect(teardowns.count == subscriptions.count)
    }
}
