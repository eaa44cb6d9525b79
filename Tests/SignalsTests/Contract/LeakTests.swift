import Dispatch
import Foundation
import Signals
import Synchronization
import Testing
import SignalsTesting

/// A producer that keeps every observer it was handed, like a long-lived callback source.
private final class LeakProducer: Sendable {
    private let observers = SanitizedBox<[Observer<Int, TestError>]>([])

    /// A cold signal whose generator and teardown capture `canary`.
    func signal(capturing canary: ContractCanary, teardowns: Counter) -> Signal<Int, TestError> {
        Signal { [observers] observer in
            observers.withLock { $0.append(observer) }
            return { _ = canary.touch(teardowns.increment()) }
        }
    }

    var subscriptions: Int { observers.withLock { $0.count } }

    func send(_ event: Event<Int, TestError>) {
        observers.withLock { $0.last }?.send(event)
    }

    /// Sends `terminal` to every subscription, including ones made while doing so; `settle` runs
    /// after each one (a scheduler may deliver the terminal event, or subscribe again).
    func terminateAll(with terminal: Event<Int, TestError>, settle: () -> Void) {
        var handled = 0
        settle()
        while let next = observers.withLock({ handled < $0.count ? $0[handled] : nil }) {
            handled += 1
            next.send(terminal)
            settle()
        }
    }
}

/// 1, 2, 3, holding a canary.
private struct CanarySequence: Sequence, Sendable {
    let canary: ContractCanary
    func makeIterator() -> IndexingIterator<[Int]> { [1, 2, 3].makeIterator() }
}

/// A finished or cancelled chain releases every object it created: what the producer, the
/// operator closures and the sink captured is released after the terminal event and after
/// cancellation, even while the user keeps the token and the producer keeps its observer (as a
/// URLSession delegate or a timer would). Releasing the token without cancelling it cancels the
/// chain.
@Suite(.timeLimit(.minutes(1)))
struct LeakTests {
    /// How a subscription ends in a leak check.
    enum Ending: CaseIterable, Sendable {
        case finished, failed, cancelled, tokenReleased
    }

    struct LeakCase: Sendable, CustomStringConvertible {
        let operation: ContractOperatorCase
        let ending: Ending
        var description: String { "\(operation) \(ending)" }
    }

    static let cases: [LeakCase] = ContractOperatorCase.all.flatMap { operation in
        Ending.allCases.map { LeakCase(operation: operation, ending: $0) }
    }

    @Test(arguments: cases)
    func everythingCapturedIsReleased(_ leakCase: LeakCase) {
        let producer = LeakProducer()
        let teardowns = Counter()
        weak var producerCanary: ContractCanary?
        weak var operatorCanary: ContractCanary?
        weak var sinkCanary: ContractCanary?
        var token: CancellationToken?
        // Held apart from the operator's canary, so the test can run it without keeping the
        // canary alive.
        let scheduler: TestScheduler
        do {
            let forProducer = ContractCanary()
            let forOperator = ContractCanary()
            let forSink = ContractCanary()
            producerCanary = forProducer
            operatorCanary = forOperator
            sinkCanary = forSink
            scheduler = forOperator.scheduler
            let signal = leakCase.operation.apply(producer.signal(capturing: forProducer, teardowns: teardowns), forOperator)
            token = signal.sink(
                receiveCompletion: { _ in _ = forSink },
                receiveValue: { _ in _ = forSink }
            )
            forOperator.settle()
            producer.send(.value(1))
        }
        let settle = { scheduler.advance(by: .seconds(10)) }
        switch leakCase.ending {
        case .finished:
            producer.terminateAll(with: .finished, settle: settle)
        case .failed:
            producer.terminateAll(with: .failed(ContractOperatorCase.failure), settle: settle)
        case .cancelled:
            token?.cancel()
        case .tokenReleased:
            token = nil
        }
        #expect(scheduler.pendingCount == 0, "a scheduled action outlived the subscription")
        // The token (if kept) and the producer's observers are still alive here.
        #expect(producerCanary == nil, "the producer's captures leaked")
        #expect(operatorCanary == nil, "an operator closure's captures leaked")
        #expect(sinkCanary == nil, "the sink's captures leaked")
        #expect(teardowns.count == producer.subscriptions, "every subscription is torn down")
        withExtendedLifetime(token) {}
        withExtendedLifetime(producer) {}
    }

    // MARK: - Sources

    @Test func valueErrorEmptyResultAndSequenceReleaseTheirSink() {
        typealias Make = @Sendable (ContractCanary) -> Signal<Int, TestError>
        let sources: [(String, Make)] = [
            ("value", { _ in Signal(value: 1) }),
            ("error", { _ in Signal(error: TestError()) }),
            ("empty", { _ in .empty }),
            ("result", { _ in Signal(value: 2) }),
            ("sequence", { canary in Signal(sequence: CanarySequence(canary: canary)) }),
            ("deferred", { canary in Signal(deferred: { canary.touch(Signal(value: 3)) }) }),
        ]
        for (name, make) in sources {
            weak var sourceCanary: ContractCanary?
            weak var sinkCanary: ContractCanary?
            var token: CancellationToken?
            do {
                let forSource = ContractCanary()
                let forSink = ContractCanary()
                sourceCanary = forSource
                sinkCanary = forSink
                token = make(forSource).sink(receiveCompletion: { _ in _ = forSink }, receiveValue: { _ in _ = forSink })
            }
            #expect(sourceCanary == nil, "\(name)")
            #expect(sinkCanary == nil, "\(name)")
            withExtendedLifetime(token) {}
        }
    }

    @Test func neverReleasesItsSinkWhenCancelledOrReleased() {
        for release in [false, true] {
            weak var sinkCanary: ContractCanary?
            var token: CancellationToken?
            do {
                let forSink = ContractCanary()
                sinkCanary = forSink
                token = Signal<Int, Never>.never.sink { _ in _ = forSink }
            }
            if release { token = nil } else { token?.cancel() }
            #expect(sinkCanary == nil)
            withExtendedLifetime(token) {}
        }
    }

    @Test func operationReleasesItsCapturesWhenItFinishes() async throws {
        weak var operationCanary: ContractCanary?
        weak var sinkCanary: ContractCanary?
        let recorder = SignalRecorder<Int, any Error>()
        var token: CancellationToken?
        do {
            let forOperation = ContractCanary()
            let forSink = ContractCanary()
            operationCanary = forOperation
            sinkCanary = forSink
            token = Signal<Int, any Error>(operation: { forOperation.touch(5) }).observe(Observer { event in
                _ = forSink
                recorder.observer.send(event)
            })
        }
        try await waitUntil { recorder.events.filter(\.isTerminal).count == 1 }
        // The task releases its closure when it returns, just after the terminal event.
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while operationCanary != nil || sinkCanary != nil {
            try #require(ContinuousClock.now < deadline, "captures not released")
            await Task.yield()
        }
        withExtendedLifetime(token) {}
    }

    @Test func cancelledOperationReleasesItsCaptures() async throws {
        weak var operationCanary: ContractCanary?
        weak var sinkCanary: ContractCanary?
        let started = Counter()
        var token: CancellationToken?
        do {
            let forOperation = ContractCanary()
            let forSink = ContractCanary()
            operationCanary = forOperation
            sinkCanary = forSink
            token = Signal<Int, any Error>(operation: {
                started.increment()
                try await Task.sleep(for: .seconds(3600))
                return forOperation.touch(1)
            }).sink(receiveCompletion: { _ in _ = forSink }, receiveValue: { _ in _ = forSink })
        }
        try await waitUntil { started.count == 1 }
        token?.cancel()
        // The sink is released at once; the task's closure when the cancelled task returns.
        #expect(sinkCanary == nil)
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while operationCanary != nil {
            try #require(ContinuousClock.now < deadline, "captures not released")
            await Task.yield()
        }
        withExtendedLifetime(token) {}
    }

    // MARK: - Cycles through tokens

    @Test func aReleasedTokenIsNotKeptAliveByItsChain() {
        weak var weakToken: CancellationToken?
        let producer = LeakProducer()
        let teardowns = Counter()
        do {
            let token = ContractOperatorCase.all.last!.apply(producer.signal(capturing: ContractCanary(), teardowns: teardowns)).0
                .retry(3)
                .first()
                .sink(receiveCompletion: { _ in }, receiveValue: { _ in })
            weakToken = token
        }
        #expect(weakToken == nil)
        #expect(teardowns.count == producer.subscriptions)
    }

    @Test func aBagReleasesItsChainsWithIt() {
        weak var sinkCanary: ContractCanary?
        let producer = LeakProducer()
        let teardowns = Counter()
        var bag: CancellationBag? = CancellationBag()
        do {
            let forSink = ContractCanary()
            sinkCanary = forSink
            for operation in ContractOperatorCase.all {
                operation.apply(producer.signal(capturing: ContractCanary(), teardowns: teardowns)).0
                    .sink(receiveCompletion: { _ in _ = forSink }, receiveValue: { _ in _ = forSink })
                    .store(in: bag!)
            }
        }
        #expect(sinkCanary != nil)
        bag = nil
        #expect(sinkCanary == nil)
        #expect(teardowns.count == producer.subscriptions)
    }
}
