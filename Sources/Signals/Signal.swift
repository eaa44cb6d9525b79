/// A cold push stream: a value that describes work, and runs it again for every subscription.
///
/// Subscribing (``sink(receiveCompletion:receiveValue:)``, ``observe(_:)``) runs the work from the
/// start and returns a ``CancellationToken``. Retrying is subscribing again, so everything a chain
/// does — building a URL, reading a token, modifying a request — runs again on every attempt.
///
/// The contract every signal keeps:
/// - events are values followed by at most one terminal event (`finished` or `failed`);
/// - nothing is delivered after a terminal event, or after the subscription is cancelled;
/// - cancelling is safe from any thread, at any time, any number of times, and reaches the
///   producer's teardown;
/// - no lock is held while an observer or a user closure runs;
/// - a finished or cancelled subscription releases every object it created.
///
/// Outputs are `Sendable` because a signal may deliver them on any thread.
public struct Signal<Output: Sendable, Failure: Error>: Sendable {
    /// Subscribes `observer` within `token`. The body must keep the contract: operators built on
    /// this entry point either forward a contract-keeping upstream untouched or guard their own
    /// output.
    @usableFromInline
    typealias Body = @Sendable (_ observer: Observer<Output, Failure>, _ token: CancellationToken) -> Void

    @usableFromInline
    let body: Body

    /// Creates a signal from a body that already keeps the event contract.
    @inlinable
    init(unchecked body: @escaping Body) {
        self.body = body
    }

    /// Creates a signal from a generator that receives an observer and returns its teardown.
    ///
    /// The generator runs once per subscription. The observer it receives may be called from any
    /// thread; it serialises events, lets only the first terminal event through and drops
    /// everything after a terminal event or cancellation. The teardown runs once, when the
    /// subscription is cancelled or after its terminal event is delivered.
    ///
    /// ```swift
    /// let ticks = Signal<Int, Never> { observer in
    ///     let timer = startTimer { observer.send($0) }
    ///     return { timer.invalidate() }
    /// }
    /// ```
    @inlinable
    public init(
        _ generator: @escaping @Sendable (Observer<Output, Failure>) -> (@Sendable () -> Void)?
    ) {
        self.init(unchecked: { downstream, token in
            let outlet = Outlet(downstream)
            guard token.add(outlet) else { return }
            outlet.setTeardown(generator(outlet.observer))
        })
    }

    /// Creates a signal from a generator that also receives the ``SubscriptionContext`` the
    /// subscription carries: for a producer that subscribes other signals itself and passes the
    /// context on (by subscribing them in a `CancellationToken(context:)`), or that reads it.
    ///
    /// Everything ``init(_:)`` guarantees holds.
    @inlinable
    public init(
        subscribing generator: @escaping @Sendable (Observer<Output, Failure>, SubscriptionContext) -> (@Sendable () -> Void)?
    ) {
        self.init(unchecked: { downstream, token in
            let outlet = Outlet(downstream)
            guard token.add(outlet) else { return }
            outlet.setTeardown(generator(outlet.observer, token.context))
        })
    }

    /// Subscribes `observer` and returns the token that keeps the subscription alive.
    ///
    /// Releasing or cancelling the token cancels the subscription.
    @inlinable
    @discardableResult
    public func observe(_ observer: Observer<Output, Failure>) -> CancellationToken {
        let token = CancellationToken()
        body(observer, token)
        return token
    }

    /// Subscribes `observer` as part of an existing cancellation scope: cancelling `token`
    /// cancels this subscription. Use it to build operators from the outside.
    @inlinable
    public func observe(_ observer: Observer<Output, Failure>, in token: CancellationToken) {
        body(observer, token)
    }

    /// Subscribes with closures for the values and the completion.
    ///
    /// - Returns: the token that keeps the subscription alive; release or cancel it to stop.
    @inlinable
    @discardableResult
    public func sink(
        receiveCompletion: @escaping @Sendable (Completion<Failure>) -> Void,
        receiveValue: @escaping @Sendable (Output) -> Void
    ) -> CancellationToken {
        observe(Observer { event in
            switch event {
            case .value(let value): receiveValue(value)
            case .finished: receiveCompletion(.finished)
            case .failed(let error): receiveCompletion(.failure(error))
            }
        })
    }
}

extension Signal where Failure == Never {
    /// Subscribes with a closure for the values of a signal that cannot fail.
    @inlinable
    @discardableResult
    public func sink(receiveValue: @escaping @Sendable (Output) -> Void) -> CancellationToken {
        observe(Observer { event in
            if case .value(let value) = event { receiveValue(value) }
        })
    }
}
