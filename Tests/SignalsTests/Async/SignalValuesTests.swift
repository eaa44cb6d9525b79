import Dispatch
import Signals
import Testing

@Suite struct SignalValuesTests {
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
        #expect(await first.next(isolation: nil) == 1)
        #expect(await second.next(isolation: nil) == 2)
        #expect(await first.next(isolation: nil) == nil)
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
            return await iterator.next(isolation: nil)
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
}
