import Signals

/// A value whose `deinit` runs user code: it calls `onRelease`. An operator that releases a value
/// while holding its lock, when that code calls back into the same subscription (sends into its
/// source, cancels it), deadlocks or traps with "Recursive call to lock".
final class Lease: Sendable {
    let id: Int
    private let onRelease: @Sendable (Int) -> Void

    init(_ id: Int, onRelease: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.id = id
        self.onRelease = onRelease
    }

    deinit {
        onRelease(id)
    }
}

/// A subject of leases that return themselves to the pool when released: each one, from its
/// `deinit`, counts itself as returned, sends a fresh (inert) lease back into the subject and
/// cancels the subscription in ``token`` (if set), the two ways a release reaches back into the
/// stream that carried it.
final class LeasePool: Sendable {
    let subject = PassthroughSubject<Lease, Never>()
    /// The subscription a released lease cancels.
    let token = ContractTokenBox()
    private let returned = Counter()

    init() {}

    /// How many leases made by ``lease(_:)`` have been released.
    var returnedCount: Int { returned.count }

    /// A lease that calls back into the stream from its `deinit`.
    func lease(_ id: Int) -> Lease {
        Lease(id) { [subject, returned, token] _ in
            returned.increment()
            subject.send(Lease(-1))
            token.cancel()
        }
    }

    /// Sends a new lease numbered `id` into the subject; the caller keeps no reference to it.
    func send(_ id: Int) {
        subject.send(lease(id))
    }
}
