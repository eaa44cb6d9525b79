import Signals
import Testing

/// A source driven by hand from a test: counts subscriptions and teardowns, and sends to the
/// latest subscriber. Observers are kept after teardown so a test can check that sending after
/// cancellation delivers nothing.
final class ManualSource<Output: Sendable, Failure: Error>: Sendable {
    private struct State {
        var observers: [Observer<Output, Failure>] = []
        var teardowns = 0
        /// One object per subscription, captured by its teardown: alive while the subscription is.
        var subscriptionObjects: [Weak<Probe>] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    init() {}

    var signal: Signal<Output, Failure> {
        Signal { [self] observer in
            let probe = Probe()
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.observers.append(observer)
                state.subscriptionObjects.append(Weak(probe))
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
            return { [self] in
                _ = probe
                state.withLock { $0.teardowns += 1 }
            }
        }
    }

    var subscriptions: Int { state.withLock { $0.observers.count } }
    var teardowns: Int { state.withLock { $0.teardowns } }
    /// The number of subscriptions whose objects are still alive (not yet released).
    var liveSubscriptions: Int { state.withLock { $0.subscriptionObjects.filter { $0.object != nil }.count } }
    /// `true` while the latest subscription has not been torn down.
    var isActive: Bool { state.withLock { $0.observers.count > $0.teardowns } }

    /// Subscriptions not yet torn down, as far as the counts tell.
    var live: Int { subscriptions - teardowns }

    /// The observer of subscription `index` (the latest when `nil`).
    func observer(_ index: Int? = nil) -> Observer<Output, Failure>? {
        state.withLock { state in
            let position = index ?? state.observers.count - 1
            return state.observers.indices.contains(position) ? state.observers[position] : nil
        }
    }

    func send(_ value: Output, to index: Int? = nil) { observer(index)?.send(value) }
    func finish(_ index: Int? = nil) { observer(index)?.finish() }
    func fail(_ error: Failure, _ index: Int? = nil) { observer(index)?.fail(error) }

    /// Waits until the source has at least `count` subscriptions (no polling, no sleeping).
    func waitForSubscription(count: Int = 1) async {
        while subscriptions < count {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.observers.count >= count { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }
}

/// An object whose lifetime a test watches with a weak reference.
final class Probe: Sendable {
    init() {}
}

/// A weak reference, for leak checks.
struct Weak<T: AnyObject & Sendable>: Sendable {
    weak var object: T?
    init(_ object: T) { self.object = object }
}

struct TimedOutWaiting: Error {}

/// Who resumes `within`'s continuation first: the operation or the safety-net timer.
private final class Race: Sendable {
    private let state = Locked<(claimed: Bool, timer: Task<Void, Never>?)>((false, nil))

    func claim() -> Bool {
        state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }

    func setTimer(_ timer: Task<Void, Never>) {
        state.withLock { $0.timer = timer }
    }

    func cancelTimer() {
        state.withLock { $0.timer }?.cancel()
    }
}

/// Runs `operation` in a new task and returns its result, failing with `TimedOutWaiting` after
/// `seconds` of wall-clock time. A safety net only: the bound is far above what any test needs
/// (it includes the time the task may wait for a thread while the synchronous stress and contract
/// suites keep the cooperative pool busy on a loaded two-core machine), and a hung operation fails
/// the test instead of hanging the run.
func within<T: Sendable>(
    seconds: Int = 90,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        race.setTimer(Task {
            try? await Task.sleep(for: .seconds(seconds))
            if race.claim() { continuation.resume(throwing: TimedOutWaiting()) }
        })
        Task {
            do {
                let value = try await operation()
                if race.claim() { continuation.resume(returning: value) }
            } catch {
                if race.claim() { continuation.resume(throwing: error) }
            }
            race.cancelTimer()
        }
    }
}
