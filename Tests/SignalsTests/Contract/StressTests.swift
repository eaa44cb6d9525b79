import Dispatch
import Foundation
import Signals
import Synchronization
import Testing

/// One subscription under stress: a probe producer, a checking observer and the token.
private final class StressSubscription: Sendable {
    let probe = ContractProbe<Int, TestError>()
    private let checker = StressChecker()
    private let cancelReturned = Atomic<Bool>(false)
    private let token = CancellationToken()
    private let canary: ContractCanary

    init(_ operation: ContractOperatorCase) {
        let (signal, canary) = operation.apply(probe.signal)
        self.canary = canary
        signal.observe(Observer { [checker] event in checker.receive(event) }, in: token)
        canary.settle()
    }

    /// Sends a value, then runs what the operator scheduled (on this producer's thread, racing the
    /// other producers and the canceller).
    func produce(value: Int) {
        let late = cancelReturned.load(ordering: .acquiring)
        probe.send(.value(late ? StressTests.lateValue : value))
        canary.settle()
    }

    func produceTerminal(failing: Bool) {
        let late = cancelReturned.load(ordering: .acquiring)
        if failing {
            probe.send(.failed(TestError(code: late ? StressTests.lateValue : ContractOperatorCase.failure.code)))
        } else if !late {
            probe.send(.finished)
        }
        canary.settle()
    }

    func cancel() {
        token.cancel()
        cancelReturned.store(true, ordering: .releasing)
    }

    func expectContractKept(_ name: String) {
        let record = checker.record
        #expect(record.terminals <= 1, "\(name): \(record.terminals) terminal events")
        #expect(record.afterTerminal == 0, "\(name): events after the terminal event")
        #expect(record.late.isEmpty, "\(name): delivered after cancel returned: \(record.late)")
        #expect(record.overlaps == 0, "\(name): overlapping deliveries")
        #expect(probe.everyTeardownRanOnce, "\(name): a teardown did not run exactly once")
    }
}

/// Checks the events of one subscription as they arrive, from any thread.
private final class StressChecker: Sendable {
    struct Record {
        var events = 0
        var terminals = 0
        var afterTerminal = 0
        var overlaps = 0
        var late: [String] = []
    }

    private let state = SanitizedBox(Record())
    private let delivering = Atomic<Bool>(false)

    var record: Record { state.withLock { $0 } }

    func receive(_ event: Event<String, any Error>) {
        // Deliveries must never overlap: they are serialised.
        let overlapped = delivering.exchange(true, ordering: .acquiringAndReleasing)
        let text: String
        switch event {
        case .value(let value): text = value
        case .finished: text = ""
        case .failed(let error): text = "\(error)"
        }
        state.withLock { record in
            if overlapped { record.overlaps += 1 }
            if record.terminals > 0 { record.afterTerminal += 1 }
            record.events += 1
            if event.isTerminal { record.terminals += 1 }
            if Self.containsLateValue(text) { record.late.append(text) }
        }
        if !overlapped { delivering.store(false, ordering: .releasing) }
    }

    /// `true` if `text` holds a number of at least `StressTests.lateThreshold`.
    static func containsLateValue(_ text: String) -> Bool {
        var number = 0
        for character in text.unicodeScalars {
            if ("0"..."9").contains(character) {
                number = min(number * 10 + Int(character.value - 48), StressTests.lateThreshold)
                if number >= StressTests.lateThreshold { return true }
            } else {
                number = 0
            }
        }
        return false
    }
}

/// Values appended from any thread.
private final class LockedLog: Sendable {
    private let state = SanitizedBox<[Int]>([])
    func append(_ value: Int) { state.withLock { $0.append(value) } }
    var values: [Int] { state.withLock { $0 } }
}

/// `true` when the process runs under the thread sanitizer.
let isThreadSanitized: Bool = {
    #if canImport(Darwin)
    let handle = UnsafeMutableRawPointer(bitPattern: -2)
    #else
    let handle: UnsafeMutableRawPointer? = nil
    #endif
    return dlsym(handle, "__tsan_init") != nil
}()

/// Tens of thousands of subscriptions whose producers send from several threads while other
/// threads cancel, checking the contract on every one: at most one terminal event, nothing after
/// it, nothing sent after a cancellation returned, deliveries never overlapping, and every
/// teardown run exactly once.
///
/// Under the thread sanitizer (many times slower) the counts are scaled to 0.3, so the suite stays
/// within a few seconds on two cores; set `SIGNALS_STRESS_SCALE` to change the counts.
@Suite(.timeLimit(.minutes(2)))
struct StressTests {
    /// Multiplies every count in this suite.
    static let scale: Double = {
        if let text = ProcessInfo.processInfo.environment["SIGNALS_STRESS_SCALE"], let scale = Double(text) {
            return scale
        }
        return isThreadSanitized ? 0.3 : 1
    }()

    static func count(_ normal: Int) -> Int {
        max(1, Int(Double(normal) * scale))
    }

    /// A value the producers send only after they saw the cancellation return. It survives every
    /// case's transformation as a number of at least `lateThreshold` in the output's description.
    static let lateValue = 1_000_000

    static let lateThreshold = 100_000

    // MARK: - Every operator, producers racing a canceller

    @Test(arguments: ContractOperatorCase.all)
    func producersRacingACanceller(_ operation: ContractOperatorCase) {
        let total = Self.count(2_000)
        var done = 0
        while done < total {
            let batch = min(250, total - done)
            runBatch(operation, size: batch)
            done += batch
        }
    }

    private func runBatch(_ operation: ContractOperatorCase, size: Int) {
        let subscriptions = (0..<size).map { _ in StressSubscription(operation) }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            switch worker {
            case 3:
                // The canceller: every subscription, twice, from a different starting point.
                for index in subscriptions.indices {
                    subscriptions[(index + size / 2) % size].cancel()
                }
                for subscription in subscriptions { subscription.cancel() }
            default:
                // Producers: values from every worker, a terminal event from two of them.
                for round in 0..<3 {
                    for subscription in subscriptions {
                        subscription.produce(value: round + 1)
                        if round == worker {
                            subscription.produceTerminal(failing: worker == 1)
                        }
                    }
                }
            }
        }
        for subscription in subscriptions {
            subscription.expectContractKept("\(operation)")
        }
    }

    // MARK: - The Outlet alone, many producer threads

    @Test func generatorSerialisesEightProducerThreadsAndACanceller() {
        let total = Self.count(20_000)
        let batch = 500
        var done = 0
        while done < total {
            let size = min(batch, total - done)
            let subscriptions = (0..<size).map { _ in
                StressSubscription(ContractOperatorCase("map.filter") { up, _ in up.map { $0 * 2 }.filter { $0 != 4 } })
            }
            DispatchQueue.concurrentPerform(iterations: 9) { worker in
                if worker == 8 {
                    for subscription in subscriptions.reversed() { subscription.cancel() }
                    return
                }
                for subscription in subscriptions {
                    subscription.produce(value: worker + 1)
                    subscription.produce(value: worker + 2)
                    if worker == 7 { subscription.produceTerminal(failing: false) }
                }
            }
            for subscription in subscriptions {
                subscription.expectContractKept("map.filter")
            }
            done += size
        }
    }

    @Test func everyDeliveredValueArrivesOnceAndInOrderPerProducer() {
        // No cancellation: every value sent by every thread is delivered exactly once, and each
        // thread's values arrive in the order that thread sent them.
        let total = Self.count(2_000)
        let threads = 4
        let perThread = 25
        for _ in 0..<total / 100 {
            let probes = (0..<100).map { _ in ContractProbe<Int, Never>() }
            let received = (0..<100).map { _ in LockedLog() }
            let tokens = probes.indices.map { index in
                probes[index].signal.sink { value in received[index].append(value) }
            }
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for step in 0..<perThread {
                    for probe in probes { probe.send(.value(thread * 1_000 + step)) }
                }
            }
            for index in probes.indices {
                let values = received[index].values
                #expect(values.count == threads * perThread)
                for thread in 0..<threads {
                    let mine = values.filter { $0 / 1_000 == thread }
                    #expect(mine == (0..<perThread).map { thread * 1_000 + $0 })
                }
            }
            tokens.forEach { $0.cancel() }
        }
    }

    // MARK: - Tokens and bags

    @Test func cancellablesAddedWhileATokenIsCancelledAreCancelledExactlyOnce() {
        let total = Self.count(20_000)
        let batch = 1_000
        var done = 0
        while done < total {
            let size = min(batch, total - done)
            let tokens = (0..<size).map { _ in CancellationToken() }
            let counters = (0..<size).map { _ in (0..<3).map { _ in Counter() } }
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for index in 0..<size {
                    if worker == 3 {
                        tokens[index].cancel()
                    } else {
                        let counter = counters[index][worker]
                        tokens[index].onCancel { counter.increment() }
                    }
                }
            }
            for index in 0..<size {
                for counter in counters[index] { #expect(counter.count == 1) }
            }
            done += size
        }
    }

    @Test func childTokensCancelledFromBothEndsTearDownOnce() {
        let total = Self.count(20_000)
        let teardowns = (0..<total).map { _ in Counter() }
        let parents = (0..<total).map { _ in CancellationToken() }
        let children = parents.indices.map { index -> CancellationToken in
            let child = parents[index].makeChild()
            let counter = teardowns[index]
            child.onCancel { counter.increment() }
            return child
        }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<total {
                if worker % 2 == 0 { parents[index].cancel() } else { children[index].cancel() }
            }
        }
        #expect(teardowns.allSatisfy { $0.count == 1 })
    }

    @Test func bagInsertsRacingCancelAllCancelEverythingOnce() {
        let total = Self.count(20_000)
        let bag = CancellationBag()
        let counters = (0..<total).map { _ in Counter() }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            if worker == 3 {
                for _ in 0..<100 { bag.cancelAll() }
                return
            }
            for index in stride(from: worker, to: total, by: 3) {
                let counter = counters[index]
                bag.insert(CancellationToken { counter.increment() })
            }
        }
        bag.cancelAll()
        #expect(counters.allSatisfy { $0.count == 1 })
    }

    @Test func retryResubscribingWhileCancelledNeverLeaksAnAttempt() {
        // Failures from two threads make `retry` resubscribe while a third thread cancels: every
        // attempt that started is torn down exactly once, and at most one terminal arrives.
        let total = Self.count(10_000)
        let batch = 500
        var done = 0
        while done < total {
            let size = min(batch, total - done)
            let subscriptions = (0..<size).map { _ in
                StressSubscription(ContractOperatorCase("retry(1_000)") { up, _ in up.retry(1_000) })
            }
            DispatchQueue.concurrentPerform(iterations: 3) { worker in
                if worker == 2 {
                    for subscription in subscriptions { subscription.cancel() }
                    return
                }
                for round in 0..<4 {
                    for subscription in subscriptions {
                        subscription.produce(value: round)
                        subscription.produceTerminal(failing: true)
                    }
                }
            }
            for subscription in subscriptions {
                subscription.expectContractKept("retry")
            }
            done += size
        }
    }
}
