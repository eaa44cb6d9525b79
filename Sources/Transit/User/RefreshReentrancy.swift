import Signals

/// Which refreshes, of which stores, a subscription belongs to: a request subscribed within a
/// store's refresh is part of it, and must fail rather than wait for that refresh if it is
/// answered 401.
///
/// A store's refresh signal is subscribed with its mark in the `SubscriptionContext`, which
/// every operator passes down to the client and the operators that send the refresh's request,
/// whatever thread each is subscribed on.
enum RefreshMarks: SubscriptionContextKey {
    /// The flight number of each store's refresh, by the store's identity.
    typealias Value = [ObjectIdentifier: UInt64]
}

extension TokenStore {
    /// The refresh of this store that a subscription carrying `context` is part of, if any.
    func refresh(in context: SubscriptionContext) -> UInt64? {
        context[RefreshMarks.self]?[ObjectIdentifier(self)]
    }

    /// `refresh`, the signal of refresh number `flight`, subscribed as part of it (with the
    /// refreshes the context already marks: refreshes of different stores may nest).
    func markingRefresh<Output, Failure>(_ flight: UInt64, _ refresh: Signal<Output, Failure>) -> Signal<Output, Failure> {
        let store = ObjectIdentifier(self)
        return refresh.withContext { context in
            var marks = context[RefreshMarks.self] ?? [:]
            marks[store] = flight
            return context.adding(RefreshMarks.self, marks)
        }
    }
}
