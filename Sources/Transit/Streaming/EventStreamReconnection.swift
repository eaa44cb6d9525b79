/// The reconnection rules of an event stream, as a state machine apart from the code that drives
/// it (``EventStream``): told how each connection went, it says whether to reconnect, after how
/// long, or how the stream fails. See ``EventStreamOptions/reconnection``.
struct EventStreamReconnection: Sendable {
    /// How a connection ended.
    enum Ending {
        /// The body ended cleanly.
        case ended
        /// The connection failed with this error.
        case failed(any Error)
        /// No byte arrived for the idle timeout, and the connection was closed.
        case stalled(idleTimeout: Duration)
    }

    /// What to do after a connection ended.
    enum Decision {
        /// Connect again after waiting this long.
        case reconnect(after: Duration)
        /// Fail the stream with this error.
        case fail(any Error)
        /// Finish the stream (reconnection is off and the body ended cleanly).
        case finish
    }

    /// The policy; `nil`: never reconnect.
    let policy: RetryPolicy?
    /// The reconnection time the server set with `retry`, if any (it outlives its connection).
    var serverRetry: Duration?
    /// `true` once a connection was answered `200` with an event stream: a failure before that is
    /// the stream's failure, not a dropped connection.
    private(set) var hasOpened = false
    /// `true` when the current connection delivered an event.
    private var delivered = false
    /// Connections in a row that ended without an event, the current one excluded.
    private(set) var quietConnections = 0

    init(policy: RetryPolicy?) {
        self.policy = policy
    }

    /// The current connection is an event stream.
    mutating func opened() {
        hasOpened = true
    }

    /// The current connection delivered an event.
    mutating func deliveredEvent() {
        delivered = true
    }

    /// What to do now that the current connection ended so.
    mutating func decide(after ending: Ending) -> Decision {
        let quiet = delivered ? 0 : quietConnections + 1
        delivered = false
        quietConnections = quiet
        guard let policy else {
            if case .failed(let error) = ending { return .fail(error) }
            if case .stalled(let idleTimeout) = ending { return .fail(ServerSentEventError.stalled(idleTimeout: idleTimeout)) }
            return .finish
        }
        let failure: any Error
        switch ending {
        case .ended:
            failure = ServerSentEventError.reconnectionsExhausted(attempts: quiet)
        case .failed(let error):
            guard hasOpened, let code = RetryPolicy.urlErrorCode(of: error), policy.retryableURLErrorCodes.contains(code) else {
                return .fail(error)
            }
            failure = error
        case .stalled(let idleTimeout):
            failure = ServerSentEventError.stalled(idleTimeout: idleTimeout)
            guard hasOpened else { return .fail(failure) }
        }
        guard quiet < max(1, policy.maxAttempts) else { return .fail(failure) }
        let backoff = policy.backoff(beforeRetry: quiet + 1)
        guard let serverRetry else { return .reconnect(after: backoff) }
        let retry = ScheduledSubscription.clamped(serverRetry)
        return .reconnect(after: quiet == 0 ? retry : max(retry, backoff))
    }
}
