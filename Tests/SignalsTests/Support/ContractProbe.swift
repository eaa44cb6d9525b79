import Dispatch
import Foundation
import Signals

/// A value behind the package's sanitizer-visible lock.
typealias SanitizedBox<Value> = Locked<Value>

/// A hostile producer for contract tests: it hands every subscription's observer to the test, so
/// the test can keep sending after a terminal event or a cancellation, from any thread, and it
/// counts subscriptions and teardowns.
final class ContractProbe<Output: Sendable, Failure: Error>: Sendable {
    private struct State {
        var observers: [Observer<Output, Failure>] = []
        /// How many times the teardown of each subscription ran, by subscription.
        var teardowns: [Int] = []
    }

    private let state = SanitizedBox(State())

    init() {}

    /// A cold signal: every subscription registers a new observer with the probe.
    var signal: Signal<Output, Failure> {
        Signal { [self] observer in
            let index = state.withLock { state -> Int in
                state.observers.append(observer)
                state.teardowns.append(0)
                return state.observers.count - 1
            }
            return { [self] in state.withLock { $0.teardowns[index] += 1 } }
        }
    }

    /// How many times the signal was subscribed.
    var subscriptions: Int { state.withLock { $0.observers.count } }
    /// How many teardowns ran, over all subscriptions.
    var teardowns: Int { state.withLock { $0.teardowns.reduce(0, +) } }
    /// `true` when the teardown of every subscription ran exactly once.
    var everyTeardownRanOnce: Bool { state.withLock { $0.teardowns.allSatisfy { $0 == 1 } } }
    /// Every observer the probe was handed, oldest first.
    var observers: [Observer<Output, Failure>] { state.withLock { $0.observers } }
    /// The observer of the newest subscription.
    var latest: Observer<Output, Failure>? { state.withLock { $0.observers.last } }

    /// Sends `event` to the newest subscription.
    func send(_ event: Event<Output, Failure>) {
        latest?.send(event)
    }

    /// Sends `event` to every subscription ever made, including ones that ended.
    func broadcast(_ event: Event<Output, Failure>) {
        for observer in observers { observer.send(event) }
    }

    /// Sends `terminal` to the newest subscription until no new subscription appears (a `retry` or
    /// a `catch` that resubscribes the probe gets `terminal` on every attempt). `settle` runs after
    /// each one, so that a subscription a scheduler makes (`subscribe(on:)`) exists before the
    /// next round.
    func terminateAll(with terminal: Event<Output, Failure>, settle: () -> Void = {}) {
        var handled = 0
        settle()
        while handled < subscriptions {
            let next = observers[handled]
            handled += 1
            next.send(terminal)
            settle()
        }
    }

    /// Sends values and terminal events to every subscription ever made, from several threads at
    /// once, and returns when all of them are done.
    func flood(values: [Output], terminals: [Event<Output, Failure>], threads: Int = 4) {
        let targets = observers
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<values.count {
                for observer in targets {
                    observer.send(values[(round + thread) % values.count])
                    if !terminals.isEmpty, round % 3 == thread % 3 {
                        observer.send(terminals[(round + thread) % terminals.count])
                    }
                }
            }
        }
    }
}

/// A box for the token of a subscription, so closures set up before subscribing can reach it.
final class ContractTokenBox: Sendable {
    private let stored = SanitizedBox<CancellationToken?>(nil)
    init() {}
    var token: CancellationToken? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
    func cancel() { token?.cancel() }
}

/// What an operator case's closures capture: an object leak tests watch with a weak reference,
/// and the virtual-time scheduler its time-based operators run on.
final class ContractCanary: Sendable {
    /// The scheduler of the case's time-based operators.
    let scheduler = TestScheduler()

    init() {}

    /// Returns `value`; calling it makes a closure capture the canary.
    func touch<T>(_ value: T) -> T { value }

    /// Runs what the case's operators scheduled within the next 10 virtual seconds (a `delay`
    /// or `debounce` of 1 s delivers, a `timeout` of an hour does not fire).
    func settle() {
        scheduler.advance(by: .seconds(10))
    }
}

/// One operator (or chain) under test, with its output erased to `String` and its failure to
/// `any Error`, so the same contract checks run over every operator. Every user closure of the
/// operator captures the canary it is given.
struct ContractOperatorCase: Sendable, CustomStringConvertible {
    let description: String
    let apply: @Sendable (Signal<Int, TestError>, ContractCanary) -> Signal<String, any Error>

    init<O: Sendable, F: Error>(
        _ name: String,
        _ transform: @escaping @Sendable (Signal<Int, TestError>, ContractCanary) -> Signal<O, F>
    ) {
        description = name
        // `map` and `mapError` forward events untouched and guard nothing, so they cannot hide a
        // contract violation of the operator under test.
        apply = { upstream, canary in
            transform(upstream, canary).map { "\($0)" }.mapError { $0 as any Error }
        }
    }

    /// Applies the case with a new canary, which the caller keeps to ``ContractCanary/settle()``.
    func apply(_ upstream: Signal<Int, TestError>) -> (Signal<String, any Error>, ContractCanary) {
        let canary = ContractCanary()
        return (apply(upstream, canary), canary)
    }

    /// The upstream failure the cases are driven with; `tryCatch(TestError(code: 1))` matches it.
    static let failure = TestError(code: 1)

    /// Every core operator, alone and in chains.
    static let all: [ContractOperatorCase] = [
        ContractOperatorCase("generator") { up, _ in up },
        ContractOperatorCase("map") { up, c in up.map { c.touch($0 * 2) } },
        ContractOperatorCase("map(keyPath)") { up, _ in up.map(\.description) },
        ContractOperatorCase("compactMap") { up, c in up.compactMap { c.touch($0 == 2 ? nil : $0) } },
        ContractOperatorCase("filter") { up, c in up.filter { c.touch($0 != 2) } },
        ContractOperatorCase("tryMap") { up, c in up.tryMap { c.touch($0) } },
        ContractOperatorCase("tryMap throwing") { up, c in
            up.tryMap { value -> Int in
                if c.touch(value) == 2 { throw TestError(code: 99) }
                return value
            }
        },
        ContractOperatorCase("mapError") { up, c in up.mapError { c.touch(TestError(code: $0.code + 100)) } },
        ContractOperatorCase("eraseError") { up, _ in up.eraseError() },
        ContractOperatorCase("catch") { up, c in up.catch { _ in c.touch(Signal<Int, Never>(value: -1)) } },
        ContractOperatorCase("catch resubscribing") { up, c in up.catch { _ in c.touch(up) } },
        ContractOperatorCase("tryCatch resubscribing") { up, c in up.tryCatch { _ in c.touch(up) } },
        ContractOperatorCase("tryCatch throwing") { up, c in
            up.tryCatch { error -> Signal<Int, TestError> in
                throw c.touch(TestError(code: error.code + 100))
            }
        },
        ContractOperatorCase("tryCatch(error)") { up, c in up.tryCatch(failure) { _ in c.touch(up) } },
        ContractOperatorCase("replaceError") { up, _ in up.replaceError(with: -1) },
        ContractOperatorCase("catch to empty") { up, _ in up.catch { _ in Signal<Int, Never>.empty } },
        ContractOperatorCase("mapToResult") { up, _ in up.mapToResult() },
        ContractOperatorCase("retry") { up, _ in up.retry(2) },
        ContractOperatorCase("retry(if:)") { up, c in up.retry(2) { c.touch($0.code == 1) } },
        ContractOperatorCase("first") { up, _ in up.first() },
        ContractOperatorCase("first(where:)") { up, c in up.first { c.touch($0 == 2) } },
        ContractOperatorCase("prefix(2)") { up, _ in up.prefix(2) },
        ContractOperatorCase("prefix(0)") { up, _ in up.prefix(0) },
        ContractOperatorCase("collect") { up, _ in up.collect() },
        ContractOperatorCase("decode") { up, c in
            up.map { c.touch(Data("\($0)".utf8)) }.decode(Int.self, decoder: JSONDecoder())
        },
        ContractOperatorCase("decode failing") { up, c in
            up.map { _ in c.touch(Data("not json".utf8)) }.decode(Int.self, decoder: JSONDecoder())
        },
        ContractOperatorCase("handleEvents") { up, c in
            up.handleEvents(
                receiveSubscription: { _ = c },
                receiveValue: { _ = c.touch($0) },
                receiveCompletion: { _ = c.touch($0) },
                receiveCancel: { _ = c }
            )
        },
        ContractOperatorCase("chain map.filter.tryMap.catch.retry") { up, c in
            up.map { c.touch($0 + 1) }
                .filter { c.touch($0 > 0) }
                .tryMap { c.touch($0) }
                .catch { _ in c.touch(up.eraseError()) }
                .retry(1)
        },
        ContractOperatorCase("chain handleEvents.retry.first.collect") { up, c in
            up.handleEvents(receiveCancel: { _ = c })
                .retry(1) { c.touch($0.code == 1) }
                .first { c.touch($0 > 1) }
                .collect()
                .mapToResult()
        },
        // The operators with locks of their own.
        ContractOperatorCase("flatMap") { up, c in up.flatMap { c.touch(Signal(value: $0)) } },
        ContractOperatorCase("flatMap(maxConcurrent: 1) of the upstream") { up, c in
            up.flatMap(maxConcurrent: 1) { _ in c.touch(up) }
        },
        ContractOperatorCase("flatMap failing inner") { up, c in
            up.flatMap { value in c.touch(value == 2 ? Signal(error: TestError(code: 7)) : Signal(value: value)) }
        },
        ContractOperatorCase("flatMapLatest") { up, c in up.flatMapLatest { c.touch(Signal(value: $0)) } },
        ContractOperatorCase("flatMapLatest of the upstream") { up, c in up.flatMapLatest { _ in c.touch(up) } },
        ContractOperatorCase("merge") { up, _ in Signal.merge([up, Signal(value: 0)]) },
        ContractOperatorCase("merge with itself") { up, _ in Signal.merge([up, up]) },
        ContractOperatorCase("zip") { up, _ in up.zip(Signal(sequence: [10, 20, 30])) },
        ContractOperatorCase("zip with itself") { up, _ in up.zip(up) },
        ContractOperatorCase("combineLatest") { up, _ in up.combineLatest(Signal(value: 0)) },
        ContractOperatorCase("combineLatest with itself") { up, _ in up.combineLatest(up) },
        ContractOperatorCase("append") { up, _ in up.append(Signal(value: 9)) },
        ContractOperatorCase("append itself") { up, _ in up.append(up) },
        ContractOperatorCase("prepend") { up, _ in Signal(value: 0).append(up) },
        ContractOperatorCase("prepend to itself") { up, _ in up.append(up) },
        ContractOperatorCase("share") { up, _ in up.share() },
        ContractOperatorCase("share.map") { up, c in up.share().map { c.touch($0 + 1) } },
        ContractOperatorCase("PassthroughSubject") { up, _ in up.relayed(through: PassthroughSubject()) },
        ContractOperatorCase("CurrentValueSubject") { up, _ in up.relayed(through: CurrentValueSubject(0)) },
        ContractOperatorCase("delay") { up, c in up.delay(for: .seconds(1), scheduler: c.scheduler) },
        ContractOperatorCase("delay(immediate)") { up, _ in up.delay(for: .seconds(1), scheduler: ImmediateScheduler()) },
        ContractOperatorCase("debounce") { up, c in up.debounce(for: .seconds(1), scheduler: c.scheduler) },
        ContractOperatorCase("throttle") { up, c in up.throttle(for: .seconds(1), scheduler: c.scheduler, latest: false) },
        ContractOperatorCase("throttle(latest)") { up, c in up.throttle(for: .seconds(1), scheduler: c.scheduler, latest: true) },
        ContractOperatorCase("timeout") { up, c in up.timeout(.seconds(3600), scheduler: c.scheduler) },
        ContractOperatorCase("timeout firing") { up, c in up.timeout(.seconds(5), scheduler: c.scheduler) },
        ContractOperatorCase("receive(on:)") { up, c in up.receive(on: c.scheduler) },
        ContractOperatorCase("receive(on: immediate)") { up, _ in up.receive(on: ImmediateScheduler()) },
        ContractOperatorCase("subscribe(on:)") { up, c in up.subscribe(on: c.scheduler) },
        ContractOperatorCase("chain flatMap.receive(on:).delay.share") { up, c in
            up.flatMap { c.touch(Signal(value: $0)) }
                .receive(on: c.scheduler)
                .delay(for: .milliseconds(10), scheduler: c.scheduler)
                .share()
        },
    ]
}

extension Signal {
    /// This signal's events, relayed by `subject` (made per subscription): subscribing subscribes
    /// to the subject, then to this signal; cancelling cancels both.
    func relayed(through subject: @autoclosure @escaping @Sendable () -> PassthroughSubject<Output, Failure>) -> Signal {
        Signal(deferred: {
            let relay = subject()
            let upstream = ContractTokenBox()
            return relay.signal.handleEvents(
                receiveSubscription: {
                    upstream.token = self.sink(
                        receiveCompletion: { relay.send(completion: $0) },
                        receiveValue: { relay.send($0) }
                    )
                },
                receiveCancel: { upstream.cancel() }
            )
        })
    }

    /// This signal's events, relayed by `subject` (made per subscription), which sends its
    /// current value first.
    func relayed(through subject: @autoclosure @escaping @Sendable () -> CurrentValueSubject<Output, Failure>) -> Signal {
        Signal(deferred: {
            let relay = subject()
            let upstream = ContractTokenBox()
            return relay.signal.handleEvents(
                receiveSubscription: {
                    upstream.token = self.sink(
                        receiveCompletion: { relay.send(completion: $0) },
                        receiveValue: { relay.value = $0 }
                    )
                },
                receiveCancel: { upstream.cancel() }
            )
        })
    }
}
