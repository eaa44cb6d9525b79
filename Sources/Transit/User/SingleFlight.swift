import Signals

/// The single-flight state of a ``TokenStore``: the current credential, the refresh running (if
/// any) with the requests waiting for it, and how a request that asks for a fresh token is
/// answered. A value kept behind the store's lock; it runs no closure and tells no one.
struct SingleFlight: Sendable {
    /// One refresh in flight and the requests waiting for it.
    struct Flight: Sendable {
        var waiters: [UInt64: Observer<AuthToken, any Error>] = [:]
        /// How many requests joined it, cancelled ones included.
        var joined = 0
        /// Identifies the flight to the refresh's observer, which must not hold `subscription`
        /// (that would be a cycle through the refresh's own subscription).
        let id: UInt64
        /// The subscription of the refresh signal and of its deadline; only the flight holds it.
        let subscription = CancellationToken()
        /// The monitors of the clients whose requests wait for this refresh (each client once,
        /// with its first waiting request).
        var sinks: [HTTPEventSink] = []

        init(id: UInt64) {
            self.id = id
        }

        mutating func add(_ sink: HTTPEventSink?) {
            guard let sink, !sinks.contains(where: { $0.isSameClient(as: sink) }) else { return }
            sinks.append(sink)
        }

        /// Tells the monitors of every waiting client how the refresh ended, once per client.
        func report(_ result: Result<AuthToken, any Error>) {
            guard !sinks.isEmpty else { return }
            let kind: HTTPEvent.Kind = switch result {
            case .success: .credentialRenewalSucceeded(sharedBy: joined)
            case .failure(let error as TokenStore.RefreshError) where error == .reentrantRefresh || error == .tooManyRefreshes:
                .credentialRenewalRefused(error, sharedBy: joined)
            case .failure(let error): .credentialRenewalFailed(error, sharedBy: joined)
            }
            for sink in sinks { sink.emit(kind) }
        }

        /// Sends the result to every waiter still waiting, in the order they asked.
        func deliver(_ result: Result<AuthToken, any Error>) {
            for waiter in waiters.sorted(by: { $0.key < $1.key }).map(\.value) {
                switch result {
                case .success(let token):
                    waiter.send(token)
                    waiter.finish()
                case .failure(let error):
                    waiter.fail(error)
                }
            }
        }
    }

    /// How a request that asks for a fresh token is answered.
    enum Decision {
        /// The token was renewed since the request was sent: it gets the current one at once.
        case current(AuthToken)
        /// A refresh starts, replacing `token`; the request waits for it.
        case start(flight: UInt64, subscription: CancellationToken, replacing: AuthToken)
        /// The request joined the refresh running; `waiters` have joined it so far.
        case join(waiters: Int)
        /// The request is part of refresh number `flight`, still running: it would wait for itself.
        case reentrant(flight: UInt64)
    }

    /// The current credential.
    var credential: BearerCredential
    /// The refresh running, if any.
    private(set) var flight: Flight?
    /// The recent refresh starts, for the refresh limits.
    var window = RefreshWindow()
    private var nextWaiterID: UInt64 = 0
    private var nextFlightID: UInt64 = 0

    init(token: AuthToken) {
        credential = BearerCredential(token)
    }

    /// Decides how to answer a request sent with `staleAccessToken` that asks for a fresh token,
    /// on behalf of `observer`, which waits under the returned identifier when the decision is
    /// to start or join a refresh. `ownFlight` is the refresh the request is part of, if any;
    /// `events` are the monitors of its client.
    mutating func ask(
        replacing staleAccessToken: String?,
        fromRefresh ownFlight: UInt64?,
        observer: Observer<AuthToken, any Error>,
        events: HTTPEventSink?
    ) -> (waiter: UInt64, decision: Decision) {
        let id = nextWaiterID
        if let ownFlight, flight?.id == ownFlight {
            return (id, .reentrant(flight: ownFlight))
        }
        if flight != nil {
            nextWaiterID += 1
            flight!.waiters[id] = observer
            flight!.joined += 1
            flight!.add(events)
            return (id, .join(waiters: flight!.joined))
        }
        if let staleAccessToken, staleAccessToken != credential.token.accessToken {
            return (id, .current(credential.token))
        }
        nextWaiterID += 1
        var started = Flight(id: nextFlightID)
        started.waiters[id] = observer
        started.joined = 1
        started.add(events)
        nextFlightID += 1
        flight = started
        return (id, .start(flight: started.id, subscription: started.subscription, replacing: credential.token))
    }

    /// Stops waiter `id` from waiting (the refresh goes on); returns it, to be released outside
    /// the lock.
    mutating func removeWaiter(_ id: UInt64) -> Observer<AuthToken, any Error>? {
        flight?.waiters.removeValue(forKey: id)
    }

    /// Ends flight number `id` with `result`, storing its token: the flight that ended, or `nil`
    /// if it had already ended.
    mutating func end(_ id: UInt64, with result: Result<AuthToken, any Error>) -> Flight? {
        guard let ended = flight, ended.id == id else { return nil }
        flight = nil
        if case .success(let token) = result { credential = BearerCredential(token) }
        return ended
    }
}
