import Signals
import Synchronization

/// A cold source the test drives by hand: every subscription is recorded, with its observer, and
/// counted; every teardown is counted.
final class ManualSource<Output: Sendable, Failure: Error>: Sendable {
    private let observers = Mutex<[Observer<Output, Failure>]>([])
    /// How many times the signal was subscribed.
    let subscriptions = Counter()
    /// How many subscriptions were torn down (cancelled, or ended).
    let teardowns = Counter()

    init() {}

    var signal: Signal<Output, Failure> {
        Signal { [self] observer in
            observers.withLock { $0.append(observer) }
            subscriptions.increment()
            return { [teardowns] in teardowns.increment() }
        }
    }

    /// Subscriptions that are neither torn down nor ended... as far as the counts tell.
    var live: Int { subscriptions.count - teardowns.count }

    /// The observer of subscription `index` (the latest by default).
    func observer(_ index: Int? = nil) -> Observer<Output, Failure> {
        observers.withLock { $0[index ?? $0.count - 1] }
    }

    func send(_ value: Output, to index: Int? = nil) { observer(index).send(value) }
    func finish(_ index: Int? = nil) { observer(index).finish() }
    func fail(_ error: Failure, _ index: Int? = nil) { observer(index).fail(error) }
}
