import Signals
import Testing
import SignalsTesting

/// A sequence that can be iterated any number of times: n, n-1, …, 1.
private struct CountDown: AsyncSequence, Sendable {
    let from: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var next: Int
        mutating func next() async -> Int? {
            guard next > 0 else { return nil }
            defer { next -= 1 }
            return next
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: from) }
}

/// `Signal(asyncSequence:)`: elements in order, the end, the failure, and cancellation both ways.
@Suite struct SignalFromAsyncSequenceTests {
    @Test func sendsEveryElementInOrderThenFinishes() async throws {
        let stream = AsyncStream<Int> { continuation in
            for value in 1...5 { continuation.yield(value) }
            continuation.finish()
        }
        let values = try await within { try await Signal(asyncSequence: stream).collect().firstValue() }
        #expect(values == [1, 2, 3, 4, 5])
    }

    @Test func aThrowingSequenceFailsTheSignalWithItsError() async throws {
        let stream = AsyncThrowingStream<Int, any Error> { continuation in
            continuation.yield(1)
            continuation.finish(throwing: TestError(code: 3))
        }
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal(asyncSequence: stream))
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        #expect(recorder.values == [1])
        #expect(recorder.failure as? TestError == TestError(code: 3))
        token.cancel()
    }

    @Test func aSequenceThatCannotFailGivesASignalThatCannotFail() async throws {
        let stream = AsyncStream<String> { continuation in
            continuation.yield("a")
            continuation.finish()
        }
        let signal: Signal<String, Never> = Signal(asyncSequence: stream)
        let recorder = SignalRecorder<String, Never>()
        let token = recorder.subscribe(to: signal)
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        #expect(recorder.events == [.value("a"), .finished])
        token.cancel()
    }

    @Test func cancellingTheSubscriptionCancelsTheIteration() async throws {
        let terminated = Counter()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        continuation.onTermination = { reason in
            if case .cancelled = reason { terminated.increment() }
        }
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal(asyncSequence: stream))
        continuation.yield(1)
        try await waitUntil { recorder.values == [1] }
        token.cancel()
        try await waitUntil { terminated.count == 1 }
        // The producer keeps going: nothing reaches the cancelled subscription.
        continuation.yield(2)
        continuation.finish()
        #expect(recorder.events == [.value(1)])
    }

    @Test func aSequenceCancelledFromItsOwnSideEndsTheSignal() async throws {
        let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal(asyncSequence: stream))
        continuation.yield(1)
        continuation.finish(throwing: CancellationError())
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        #expect(recorder.values == [1])
        #expect(recorder.failure is CancellationError)
        token.cancel()
    }

    @Test func everySubscriptionIteratesTheSequenceAgain() async throws {
        let signal = Signal(asyncSequence: CountDown(from: 3))
        let first = try await within { try await signal.collect().firstValue() }
        let second = try await within { try await signal.collect().firstValue() }
        #expect(first == [3, 2, 1])
        #expect(second == [3, 2, 1])
    }

    @Test func aLoopOverTheBridgedSignalThatIsCancelledCancelsTheSequence() async throws {
        let terminated = Counter()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        continuation.onTermination = { reason in
            if case .cancelled = reason { terminated.increment() }
        }
        let received = Counter()
        let loop = Task {
            for await _ in Signal(asyncSequence: stream).values { received.increment() }
        }
        continuation.yield(1)
        try await waitUntil { received.count == 1 }
        loop.cancel()
        await loop.value
        try await waitUntil { terminated.count == 1 }
    }
}
