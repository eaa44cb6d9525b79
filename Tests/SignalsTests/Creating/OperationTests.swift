import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct OperationTests {
    @Test func operationSendsItsResultThenFinishes() async throws {
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>(operation: { 42 }))
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        #expect(recorder.values == [42])
        #expect(recorder.isFinished)
        token.cancel()
    }

    @Test func operationThatThrowsFails() async throws {
        let recorder = SignalRecorder<Int, any Error>()
        let token = recorder.subscribe(to: Signal<Int, any Error>(operation: { throw TestError(code: 6) }))
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        #expect(recorder.failure as? TestError == TestError(code: 6))
        #expect(recorder.values.isEmpty)
        token.cancel()
    }

    @Test func nonFailingOperationSendsItsResult() async throws {
        let recorder = SignalRecorder<Int, Never>()
        let token = recorder.subscribe(to: Signal<Int, Never>(operation: { 7 }))
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
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
        try await waitUntil { first.events.filter(\.isTerminal).count == 1 && second.events.filter(\.isTerminal).count == 1 }
        #expect(runs.count == 2)
        #expect(Set(first.values + second.values) == [1, 2])
        tokens.forEach { $0.cancel() }
    }
}
