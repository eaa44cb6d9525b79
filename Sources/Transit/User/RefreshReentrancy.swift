import Foundation

/// Which refresh (of which store) the current thread is subscribing, kept in a thread-specific
/// slot for the duration of the synchronous subscription: a request subscribed then is part of
/// that refresh, and must fail rather than wait for it if it is answered 401.
final class RefreshContext: Sendable {
    let store: ObjectIdentifier
    let flight: UInt64
    /// The context this one replaced (refreshes of different stores may nest).
    private let outer: RefreshContext?

    init(store: ObjectIdentifier, flight: UInt64, outer: RefreshContext? = nil) {
        self.store = store
        self.flight = flight
        self.outer = outer
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The innermost context of this thread.
    static var current: RefreshContext? {
        pthread_getspecific(key).map { Unmanaged<RefreshContext>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with `context` as this thread's current one (nested contexts are kept).
    static func during<R>(_ context: RefreshContext, _ body: () throws -> R) rethrows -> R {
        let outer = current
        let nested = RefreshContext(store: context.store, flight: context.flight, outer: outer)
        let retained = Unmanaged.passRetained(nested)
        pthread_setspecific(key, retained.toOpaque())
        defer {
            pthread_setspecific(key, outer.map { Unmanaged.passUnretained($0).toOpaque() })
            retained.release()
        }
        return try body()
    }
}

extension TokenStore {
    /// The refresh of this store whose signal is being subscribed on the current thread, if
    /// any: a request subscribed now is part of that refresh.
    var refreshBeingSubscribed: UInt64? {
        RefreshContext.current.flatMap { $0.store == ObjectIdentifier(self) ? $0.flight : nil }
    }

    /// Runs `body` (the subscription of refresh number `flight`'s signal) with the current
    /// thread marked as subscribing that refresh.
    func subscribingRefresh(_ flight: UInt64, _ body: () -> Void) {
        RefreshContext.during(RefreshContext(store: ObjectIdentifier(self), flight: flight), body)
    }
}
