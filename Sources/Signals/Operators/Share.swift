import Synchronization

extension Signal {
    /// Shares one subscription to this signal between all the subscribers that overlap in time.
    ///
    /// Keep the returned signal and subscribe to it several times; the subscriptions that are
    /// alive at the same time share one run of the upstream's work:
    ///
    /// - The first subscriber subscribes to the upstream. Subscribers that arrive while that
    ///   upstream subscription runs join it and receive the events sent after they joined (nothing
    ///   is replayed).
    /// - When the upstream ends (finished or failed), every current subscriber receives that
    ///   terminal event, and the shared subscription is forgotten: the next subscriber subscribes
    ///   to the upstream again, running its work again. (Unlike Combine's `share()`, a completed
    ///   upstream is not remembered.)
    /// - When the last subscriber cancels, the upstream subscription is cancelled (its teardown
    ///   runs); the next subscriber subscribes to the upstream again.
    /// - A synchronous upstream (one that ends while it is being subscribed, such as
    ///   `Signal(value:)`) ends before anyone else can join, so each subscriber runs it alone.
    ///
    /// Events are delivered to subscribers one at a time, as by a ``PassthroughSubject``.
    ///
    /// ```swift
    /// let profile = api.get(endpoint: "me")
    ///     .map(\.data)
    ///     .decode(Profile.self, decoder: JSONDecoder())
    ///     .share()
    /// profile.sink { header.show($0) }.store(in: bag)   // one request…
    /// profile.sink { menu.show($0) }.store(in: bag)     // …for both
    /// ```
    public func share() -> Signal<Output, Failure> {
        let shared = ShareState(upstream: body)
        return Signal(unchecked: { observer, token in shared.subscribe(observer, in: token) })
    }
}

/// The state behind one `share()` signal: the current shared upstream subscription, if any, and
/// how many subscribers it has.
///
/// Thread safety: the connection and the count are behind a `Locked`; subscribing and delivering
/// run outside it (delivery is serialised by the connection's subject core).
final class ShareState<Output: Sendable, Failure: Error>: Sendable {
    typealias Body = Signal<Output, Failure>.Body

    /// One run of the upstream, and the subscribers that share it.
    ///
    /// Each subscriber's token holds the connection (through a ``ShareRelease``) for as long as
    /// the subscriber keeps its token, so the connection lets go of the share (and with it the
    /// upstream's closures) as soon as it ends: a finished chain releases what it captured even
    /// while its tokens live.
    final class Connection: Sendable {
        let core = SubjectCore<Output, Failure>()
        let token = CancellationToken()
        /// The share this connection belongs to, until the connection ends.
        let share: Locked<ShareState?>

        init(share: ShareState) {
            self.share = Locked(share)
        }

        /// Forgets the share (after the connection ended); returns it, to be released after the
        /// lock.
        func end() -> ShareState? {
            share.withLock { share in
                defer { share = nil }
                return share
            }
        }

        /// One subscriber left: tells the share, unless the connection already ended.
        func release() {
            share.withLock { $0 }?.release(self)
        }
    }

    private struct State {
        var connection: Connection?
        var subscribers = 0
    }

    private let upstream: Body
    private let state = Locked(State())

    init(upstream: @escaping Body) {
        self.upstream = upstream
    }

    func subscribe(_ observer: Observer<Output, Failure>, in token: CancellationToken) {
        guard !token.isCancelled else { return }
        let (connection, isNew) = state.withLock { state -> (Connection, Bool) in
            if let connection = state.connection {
                state.subscribers += 1
                return (connection, false)
            }
            let connection = Connection(share: self)
            state.connection = connection
            state.subscribers = 1
            return (connection, true)
        }
        connection.core.attach(observer, in: token)
        // If the token was cancelled meanwhile, `add` runs the release at once.
        guard token.add(ShareRelease(connection)) else { return }
        if isNew { connect(connection) }
    }

    private func connect(_ connection: Connection) {
        upstream(Observer { [self] event in
            if event.isTerminal {
                // Forget the connection first: a subscriber that subscribes again from its
                // completion handler starts a new upstream subscription.
                forget(connection)
                connection.core.send(event)
                connection.token.cancel()
                _ = connection.end()
            } else {
                connection.core.send(event)
            }
        }, connection.token)
    }

    private func forget(_ connection: Connection) {
        state.withLock { state in
            guard state.connection === connection else { return }
            state.connection = nil
            state.subscribers = 0
        }
    }

    /// One subscriber of `connection` left; the last one to leave cancels the upstream.
    func release(_ connection: Connection) {
        let last = state.withLock { state -> Bool in
            guard state.connection === connection else { return false }
            state.subscribers -= 1
            guard state.subscribers == 0 else { return false }
            state.connection = nil
            return true
        }
        guard last else { return }
        connection.token.cancel()
        _ = connection.end()
    }
}

/// Registered with each subscriber's token: releases its place in the shared connection once.
///
/// Thread safety: immutable apart from an atomic flag.
final class ShareRelease<Output: Sendable, Failure: Error>: Cancellable {
    private let connection: ShareState<Output, Failure>.Connection
    private let released = Atomic<Bool>(false)

    init(_ connection: ShareState<Output, Failure>.Connection) {
        self.connection = connection
    }

    func cancel() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.release()
    }
}
