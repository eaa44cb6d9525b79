import Signals

/// Records what a subscription delivers — every value, the terminal event, and, given a
/// `TestScheduler`, the virtual time of each — so a test states what should have happened in
/// terms of events and times.
///
/// ```swift
/// let scheduler = TestScheduler()
/// let recorder = SignalRecorder(service.posts.timeout(.seconds(5), scheduler: scheduler), scheduler: scheduler)
/// scheduler.advance(by: .seconds(5))
/// #expect(recorder.failure as? TimeoutError == TimeoutError(interval: .seconds(5)))
/// #expect(recorder.times == [.seconds(5)])
/// #expect(recorder.values.isEmpty)
/// ```
///
/// It also checks the event contract as it goes: ``violations`` counts events delivered after a
/// terminal event and deliveries that started while another one was still running (always zero
/// for a correct signal: it ends once and serialises its events).
///
/// Thread safety: every member may be used from any thread; events may arrive on any thread.
public final class SignalRecorder<Output: Sendable, Failure: Error>: Sendable {
    /// One delivered event and the scheduler's time when it arrived.
    struct Record: Sendable {
        let event: Event<Output, Failure>
        /// The recorder's scheduler's `now` when the event arrived, or `nil` without a scheduler.
        let time: Duration?
    }

    private struct State {
        var records: [Record] = []
        var violations = 0
        var delivering = false
        var token: CancellationToken?
    }

    private let state = Locked(State())
    /// The scheduler whose clock stamps each event.
    let scheduler: TestScheduler?

    /// A recorder subscribed to `signal` at once, if one is given: it keeps that subscription
    /// until ``cancel()`` or until the recorder is released. Without a signal the recorder is not
    /// subscribed yet; pass ``observer`` to a signal, or call ``subscribe(to:)``. With a
    /// `scheduler`, each event is stamped with its `now`.
    public init(_ signal: Signal<Output, Failure>? = nil, scheduler: TestScheduler? = nil) {
        self.scheduler = scheduler
        guard let signal else { return }
        let token = CancellationToken()
        state.withLock { $0.token = token }
        signal.observe(observer, in: token)
    }

    deinit {
        state.withLock { $0.token }?.cancel()
    }

    /// The observer that records every event it receives. It holds the recorder weakly, so the
    /// subscription a recorder keeps does not keep the recorder alive: releasing the recorder
    /// cancels it.
    public var observer: Observer<Output, Failure> {
        Observer { [weak self] event in self?.record(event) }
    }

    /// Subscribes to `signal` and returns the subscription's token, which the caller keeps for as
    /// long as it wants the events (as with `sink`: releasing or cancelling it ends the
    /// subscription).
    @discardableResult
    public func subscribe(to signal: Signal<Output, Failure>) -> CancellationToken {
        signal.observe(observer)
    }

    /// Cancels the subscription the subscribing initializer made and keeps.
    public func cancel() {
        state.withLock { $0.token }?.cancel()
    }

    private func record(_ event: Event<Output, Failure>) {
        let time = scheduler?.now
        let overlapped = state.withLock { state -> Bool in
            defer { state.delivering = true }
            if state.delivering { state.violations += 1 }
            if state.records.last?.event.isTerminal == true { state.violations += 1 }
            state.records.append(Record(event: event, time: time))
            return state.delivering
        }
        if !overlapped { state.withLock { $0.delivering = false } }
    }

    /// Every event with its time, in the order received.
    var records: [Record] { state.withLock { $0.records } }

    /// Every event, in the order received.
    public var events: [Event<Output, Failure>] { records.map(\.event) }

    /// The values received, in order.
    public var values: [Output] { records.compactMap(\.event.value) }

    /// The virtual time of every event, in order: `times[i]` is when `events[i]` arrived (empty
    /// without a scheduler).
    public var times: [Duration] { records.compactMap(\.time) }

    /// `true` once the signal finished normally.
    public var isFinished: Bool {
        if case .finished? = records.last?.event { return true }
        return false
    }

    /// The error the signal failed with, if it failed. A signal that has not ended yet is neither
    /// ``isFinished`` nor has a `failure`.
    public var failure: Failure? {
        if case .failed(let error)? = records.last?.event { return error }
        return nil
    }

    /// Breaches of the event contract: events received after a terminal event, and deliveries
    /// that started while another was still running. Always zero for a correct signal.
    public var violations: Int { state.withLock { $0.violations } }
}

extension SignalRecorder.Record: CustomStringConvertible {
    /// The event and its time: `value(1) at 2.0 seconds`.
    var description: String {
        let what: String
        switch event {
        case .value(let value): what = "value(\(value))"
        case .finished: what = "finished"
        case .failed(let error): what = "failed(\(error))"
        }
        return time.map { "\(what) at \($0)" } ?? what
    }
}

extension SignalRecorder: CustomStringConvertible {
    /// Every event and its time, in order, for a failing expectation's message.
    public var description: String {
        "SignalRecorder[" + records.map(\.description).joined(separator: ", ") + "]"
    }
}
