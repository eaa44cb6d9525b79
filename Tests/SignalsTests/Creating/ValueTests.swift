import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

@Suite
struct ValueTests {
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
        Signal(value: 1).observe(recorder.observer, in: token)
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
        success.subscribe(to: Signal(value: 4))
        #expect(success.events == [.value(4), .finished])
        let failure = SignalRecorder<Int, TestError>()
        failure.subscribe(to: Signal(error: TestError(code: 4)))
        #expect(failure.events == [.failed(TestError(code: 4))])
    }

    @Test func valueSendsThenFinishes() {
        let recorder = SignalRecorder<Int, Never>()
        recorder.subscribe(to: Signal(value: 7))
        #expect(recorder.events == [.value(7), .finished])
    }
}
