import Dispatch
import Signals
import Testing

/// `SubscriptionContext`: what a subscriber puts in its token reaches the source through every
/// operator, on whatever thread the source is subscribed.
@Suite("SubscriptionContext")
struct SubscriptionContextTests {
    private enum Mark: SubscriptionContextKey { typealias Value = String }
    private enum Other: SubscriptionContextKey { typealias Value = Int }
    private struct Failure: Error {}

    /// A source that sends the mark its subscription carries ("none" without one), then finishes.
    private static let source = Signal<String, Never>(subscribing: { observer, context in
        observer.send(context[Mark.self] ?? "none")
        observer.finish()
        return nil
    })

    /// The values `signal` sends when subscribed in a token carrying `mark`.
    private static func marks<Failure: Error>(
        of signal: Signal<String, Failure>,
        carrying mark: String = "m",
        scheduler: TestScheduler? = nil
    ) -> [String] {
        let seen = Locked<[String]>([])
        let token = CancellationToken(context: SubscriptionContext().adding(Mark.self, mark))
        signal.observe(Observer { event in
            if case .value(let value) = event { seen.withLock { $0.append(value) } }
        }, in: token)
        scheduler?.run()
        return seen.withLock { $0 }
    }

    @Test func aValueIsReadByKeyAndTheLatestHidesAnEarlierOne() {
        let empty = SubscriptionContext()
        #expect(empty.isEmpty)
        #expect(empty[Mark.self] == nil)
        let context = empty.adding(Mark.self, "a").adding(Other.self, 7).adding(Mark.self, "b")
        #expect(!context.isEmpty)
        #expect(context[Mark.self] == "b")
        #expect(context[Other.self] == 7)
        #expect(context.contains(Mark.self) && context.contains(Other.self))
        #expect(!empty.contains(Mark.self))
        // Immutable: the context a value was added to is unchanged.
        #expect(empty.adding(Other.self, 1)[Mark.self] == nil)
        #expect(empty.isEmpty)
    }

    @Test func aTokenWithoutAContextCarriesNothingAndAChildCarriesItsParents() {
        #expect(Self.marks(of: Self.source, carrying: "m") == ["m"])
        let seen = Locked<[String]>([])
        Self.source.sink { value in seen.withLock { $0.append(value) } }.cancel()
        #expect(seen.withLock { $0 } == ["none"])
        let parent = CancellationToken(context: SubscriptionContext().adding(Other.self, 3))
        #expect(parent.makeChild().context[Other.self] == 3)
    }

    @Test func everyOperatorPassesTheContextToItsSource() {
        let source = Self.source
        let failing = Signal<String, Failure>(subscribing: { observer, context in
            observer.fail(Failure())
            _ = context
            return nil
        })
        #expect(Self.marks(of: source.map { $0 }) == ["m"])
        #expect(Self.marks(of: source.filter { _ in true }.compactMap { $0 }) == ["m"])
        #expect(Self.marks(of: source.handleEvents(receiveValue: { _ in })) == ["m"])
        #expect(Self.marks(of: source.first(where: { _ in true })) == ["m"])
        #expect(Self.marks(of: source.prefix(1)) == ["m"])
        #expect(Self.marks(of: Signal<String, Never>(deferred: { source })) == ["m"])
        #expect(Self.marks(of: source.append(source)) == ["m", "m"])
        #expect(Self.marks(of: source.zip(source).map { $0 + $1 }) == ["mm"])
        #expect(Self.marks(of: source.combineLatest(source).map { $0 + $1 }) == ["mm"])
        #expect(Self.marks(of: Signal.merge([source, source])) == ["m", "m"])
        #expect(Self.marks(of: Signal(value: 1).flatMap { _ in source }) == ["m"])
        #expect(Self.marks(of: Signal(value: 1).flatMapLatest { _ in source }) == ["m"])
        // The handler's signal, subscribed after the failure, carries it too.
        #expect(Self.marks(of: failing.catch { _ in source }) == ["m"])
        #expect(Self.marks(of: source.setFailureType(to: Failure.self).tryMap { $0 }) == ["m"])
    }

    @Test func everyAttemptOfARetryCarriesTheContext() {
        let attempts = Locked<[String]>([])
        let flaky = Signal<String, Failure>(subscribing: { observer, context in
            let count = attempts.withLock { seen in
                seen.append(context[Mark.self] ?? "none")
                return seen.count
            }
            if count < 3 { observer.fail(Failure()) } else { observer.send("done"); observer.finish() }
            return nil
        })
        #expect(Self.marks(of: flaky.retry(5)) == ["done"])
        #expect(attempts.withLock { $0 } == ["m", "m", "m"])
    }

    @Test func aSourceSubscribedOnAnotherThreadOrLaterStillReadsIt() {
        let scheduler = TestScheduler()
        let source = Self.source
        #expect(Self.marks(of: source.subscribe(on: scheduler), scheduler: scheduler) == ["m"])
        #expect(Self.marks(of: source.receive(on: scheduler), scheduler: scheduler) == ["m"])
        #expect(Self.marks(of: source.delay(for: .seconds(1), scheduler: scheduler), scheduler: scheduler) == ["m"])
        #expect(Self.marks(of: source.timeout(.seconds(1), scheduler: scheduler), scheduler: scheduler) == ["m"])
        // A real thread: the context is in the token, not in the thread.
        let queue = DispatchQueue(label: "SubscriptionContextTests")
        let done = DispatchSemaphore(value: 0)
        let seen = Locked<String?>(nil)
        let token = CancellationToken(context: SubscriptionContext().adding(Mark.self, "threaded"))
        source.subscribe(on: queue).observe(Observer { event in
            if case .value(let value) = event { seen.withLock { $0 = value } }
            if case .finished = event { done.signal() }
        }, in: token)
        done.wait()
        #expect(seen.withLock { $0 } == "threaded")
    }

    @Test func anOperatorAddsToTheContextForItsUpstreamAlone() {
        let seen = Locked<[String]>([])
        let source = Signal<String, Never>(deferredWithContext: { context in
            Signal(value: "\(context[Mark.self] ?? "none")/\(context[Other.self].map(String.init) ?? "-")")
        })
        let token = CancellationToken(context: SubscriptionContext().adding(Mark.self, "m"))
        source.withContext { $0.adding(Other.self, 2) }
            .handleEvents(receiveValue: { _ in })
            .observe(Observer { event in
                if case .value(let value) = event { seen.withLock { $0.append(value) } }
            }, in: token)
        #expect(seen.withLock { $0 } == ["m/2"])
        // The subscriber's own token is unchanged.
        #expect(token.context[Other.self] == nil)
        // Cancelling the subscriber's token cancels the upstream subscribed in the child token.
        let cancelled = Locked(false)
        let never = Signal<String, Never> { _ in { cancelled.withLock { $0 = true } } }
        let outer = CancellationToken()
        never.withContext { $0.adding(Other.self, 1) }.observe(Observer { _ in }, in: outer)
        #expect(!cancelled.withLock { $0 })
        outer.cancel()
        #expect(cancelled.withLock { $0 })
    }

    @Test func aSharedSourceIsSubscribedOnceInAnEmptyContext() {
        #expect(Self.marks(of: Self.source.share()) == ["none"])
    }
}
