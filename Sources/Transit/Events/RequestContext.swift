import Dispatch
import Signals

/// What the chain operators (`retry(_:method:scheduler:)`, `respondToRateLimiting`,
/// `retryWithFreshToken(from:scheduler:)`) learn from the ``HTTPClient`` they subscribe: its
/// clock, and the request it is sending for them, with its monitors.
///
/// It travels in the `SubscriptionContext` from the operator down to the client, not up in
/// the responses and errors: an operator puts one in the context of its upstream's subscription
/// (operators nested in one chain share the outermost's), and each time the client is subscribed
/// within it, the client attaches itself. So when a failure reaches the operator, it reads here
/// the client's clock and the request to report the retry to; and when it subscribes again, the
/// client finds that request here and continues it (same identity, one
/// ``HTTPEvent/Kind/requestEnded(_:)``), on whatever thread the new subscription runs.
///
/// Thread safety: the state is behind a lock.
final class RequestContext: Sendable {
    /// The key of the context in a `SubscriptionContext`.
    enum Key: SubscriptionContextKey {
        typealias Value = RequestContext
    }

    private struct Attached {
        var scheduler: (any Scheduler)?
        /// Weak: the context lives as long as the tokens that carry it (a subscriber may keep its
        /// token long after the chain ended), and must not keep the request, its monitors'
        /// contexts with it. While the request runs, its stages hold it; while an operator waits
        /// to subscribe again, the operator holds the request it handed over.
        weak var request: HTTPEventSink?
    }

    private let attached = Locked(Attached())

    /// `context` with a request context: the one it carries already (an operator further down
    /// the chain made it), or a new one.
    static func joining(_ context: SubscriptionContext) -> SubscriptionContext {
        context.contains(Key.self) ? context : context.adding(Key.self, RequestContext())
    }

    /// The request context `context` carries (one that went through ``joining(_:)``).
    static func of(_ context: SubscriptionContext) -> RequestContext {
        // A context that did not go through `joining`: a request context of its own, which no
        // client attaches to.
        context[Key.self] ?? RequestContext()
    }

    /// The client subscribed within this context: its clock, and the request it sends, reported
    /// to its monitors (`nil` for a client without monitors).
    func attach(scheduler: any Scheduler, request: HTTPEventSink?) {
        // The replaced request is released after the lock.
        let replaced = attached.withLock { attached in
            defer { attached = Attached(scheduler: scheduler, request: request) }
            return attached.request
        }
        withExtendedLifetime(replaced) {}
    }

    /// The clock of the client last subscribed within this context, if any.
    var scheduler: (any Scheduler)? {
        attached.withLock { $0.scheduler }
    }

    /// The request of the client last subscribed within this context, when that client has
    /// monitors.
    var request: HTTPEventSink? {
        attached.withLock { $0.request }
    }

    /// The clock an operator times its waits on: the one it was given, else the client's, else
    /// the global queue (a signal that no client sends).
    func scheduler(given: (any Scheduler)?) -> any Scheduler {
        given ?? scheduler ?? DispatchQueue.transitGlobal
    }

    /// Reports `kind` about `failure` to the monitors of the request's client, if it has any.
    func report(_ kind: @autoclosure () -> HTTPEvent.Kind, about failure: any Error) {
        guard let request else { return }
        request.emit(kind(), request: HTTPEventSink.request(of: failure))
    }
}

extension DispatchQueue {
    /// The global concurrent queue (default quality of service), looked up once: where the chain
    /// operators time their waits when they are given no scheduler and no client is subscribed
    /// within them, and a ``TokenStore``'s refresh when its caller gives no scheduler.
    ///
    /// The same queue as `DispatchQueue.global()`, but that call makes a new wrapper object on
    /// every call on Linux: one allocation per request.
    @usableFromInline static let transitGlobal = DispatchQueue.global()
}
