import Dispatch
import Signals
import Testing

@Suite struct AsyncTests {
    // MARK: values

    @Test func valuesYieldsEveryValueThenEnds() async throws {
        var collected: [Int] = []
        for try await value in Signal<Int, TestError>(sequence: 1...5).values {
            collected.append(value)
        }
        #expect(collected == [1, 2, 3, 4, 5])
    }

    @Test func valuesThrowsTheFailureAfterTheValues() async {
        let signal = Signal<Int, TestError> { observer in
            observer.send(1)
            observer.send(2)
            observer.fail(TestError(code: 4))
            return nil
        }
        var collected: [Int] = []
        do {
            for try await value in signal.values { collected.append(value) }
            Issue.record("the loop should have thrown")
        } catch {
            #expect(error as? TestError == TestError(code: 4))
        }
        #expect(collected == [1, 2])
    }

    @Test func aSignalThatCannotFailIsIteratedWithoutTry() async {
        var collected: [Int] = []
        for await value in Signal<Int, Never>(sequence: [3, 4]).values {
            collected.append(value)
        }
        #expect(collected == [3, 4])
    }

    @Test func nextReturnsNilOnceTheSequenceEnded() async throws {
        var iterator = Signal<Int, TestError>(error: TestError(code: 1)).values.makeAsyncIterator()
        do {
            _ = try await iterator.next()
            Issue.record("next() should have thrown")
        } catch {
            #expect(error as? TestError == TestError(code: 1))
        }
        #expect(try await iterator.next() == nil)
        #expect(try await iterator.next() == nil)
    }

    @Test func valuesArriveFromAnotherTaskWhileTheLoopWaits() async throws {
        let source = ManualSource<Int, TestError>()
        let task = Task {
            var collected: [Int] = []
            for try await value in source.signal.values { collected.append(value) }
            return collected
        }
        await source.waitForSubscription()
        source.send(1)
        source.send(2)
        source.finish()
        let collected = try await within { try await task.value }
        #expect(collected == [1, 2])
        #expect(source.liveSubscriptions == 0)
    }

    @Test func iterationSubscribesLazilyOncePerIterator() async throws {
        let runs = Counter()
        let signal = Signal<Int, Never>(deferred: { Signal(value: runs.increment()) })
        let values = signal.values
        let unused = values.makeAsyncIterator()
        #expect(runs.count == 0)
        var first = values.makeAsyncIterator()
        var second = values.makeAsyncIterator()
        #expect(await first.next() == 1)
        #expect(await second.next() == 2)
        #expect(await first.next() == nil)
        #expect(runs.count == 2)
        _ = unused
    }

    @Test func leavingTheLoopEarlyCancelsTheSubscription() async throws {
        let source = ManualSource<Int, Never>()
        let task = Task {
            for await value in source.signal.values where value == 2 {
                return value
            }
            return -1
        }
        await source.waitForSubscription()
        source.send(1)
        source.send(2)
        #expect(try await within { await task.value } == 2)
        #expect(source.teardowns == 1)
        #expect(source.liveSubscriptions == 0)
    }

    @Test func releasingAnIteratorCancelsItsSubscription() async throws {
        let source = ManualSource<Int, Never>()
        let task = Task {
            var iterator = source.signal.values.makeAsyncIterator()
            return await iterator.next()
        }
        await source.waitForSubscription()
        source.send(9)
        #expect(try await within { await task.value } == 9)
        #expect(source.teardowns == 1)
        #expect(source.liveSubscriptions == 0)
    }

    @Test func cancellingTheTaskWhileWaitingThrowsCancellationErrorPromptly() async throws {
        for round in 0..<50 {
            let source = ManualSource<Int, TestError>()
            let task = Task {
                var iterator = source.signal.values.makeAsyncIterator()
                return try await iterator.next()
            }
            await source.waitForSubscription()
            for _ in 0..<(round % 5) { await Task.yield() }
            task.cancel()
            let result = try await within { await task.result }
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(source.teardowns == 1)
            #expect(source.liveSubscriptions == 0)
            source.send(1)
            source.finish()
        }
    }

    @Test func cancellingTheTaskEndsANonThrowingLoop() async throws {
        let source = ManualSource<Int, Never>()
        let task = Task {
            var collected: [Int] = []
            for await value in source.signal.values { collected.append(value) }
            return collected
        }
        await source.waitForSubscription()
        source.send(1)
        task.cancel()
        let collected = try await within { await task.value }
        #expect(collected.count <= 1)
        #expect(source.teardowns == 1)
        #expect(source.liveSubscriptions == 0)
    }

    @Test func aCancelledTaskThrowsBeforeBufferedValues() async {
        var collected: [Int] = []
        do {
            for try await value in Signal<Int, TestError>(sequence: 1...3).values {
                collected.append(value)
                withUnsafeCurrentTask { $0?.cancel() }
            }
            Issue.record("the loop should have thrown")
        } catch {
            #expect(error is CancellationError)
        }
        #expect(collected == [1])
    }

    @Test func aTaskCancelledBeforeIteratingNeverSubscribes() async throws {
        let source = ManualSource<Int, TestError>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = source.signal.values.makeAsyncIterator()
            return try await iterator.next()
        }
        let result = try await within { await task.result }
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(source.subscriptions == 0)
    }

    @Test func unboundedBufferingKeepsEveryValue() async {
        var count = 0
        for await _ in Signal<Int, Never>(sequence: 0..<10_000).values { count += 1 }
        #expect(count == 10_000)
    }

    @Test func bufferingNewestKeepsTheLatestValues() async {
        var collected: [Int] = []
        for await value in Signal<Int, Never>(sequence: 1...5).values(bufferingPolicy: .bufferingNewest(2)) {
            collected.append(value)
        }
        #expect(collected == [4, 5])
    }

    @Test func bufferingOldestKeepsTheFirstValues() async throws {
        var collected: [Int] = []
        for try await value in Signal<Int, TestError>(sequence: 1...5).values(bufferingPolicy: .bufferingOldest(2)) {
            collected.append(value)
        }
        #expect(collected == [1, 2])
    }

    @Test func aZeroBufferStillDeliversTheTerminalEvent() async {
        var collected: [Int] = []
        for await value in Signal<Int, Never>(sequence: 1...5).values(bufferingPolicy: .bufferingNewest(0)) {
            collected.append(value)
        }
        #expect(collected.isEmpty)
    }

    @MainActor @Test func iteratingFromTheMainActor() async throws {
        var collected: [Int] = []
        for try await value in Signal<Int, any Error>(sequence: [1, 2]).values { collected.append(value) }
        let first = try await Signal<Int, Never>(value: 5).firstValue()
        #expect(collected == [1, 2])
        #expect(first == 5)
    }

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
