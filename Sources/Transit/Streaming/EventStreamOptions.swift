/// How ``HTTPClient/events(_:options:)`` reads a stream of Server-Sent Events: its memory limits,
/// its idle timeout and how it reconnects.
///
/// ```swift
/// var options = EventStreamOptions()
/// options.idleTimeout = .seconds(45)        // the server comments every 15 s
/// options.reconnection.maxAttempts = 10
/// client.events(request, options: options)
/// ```
public struct EventStreamOptions: Sendable {
    /// The longest line accepted, in bytes (1 MiB unless set). A longer one fails the stream with
    /// ``ServerSentEventError/lineTooLong(limit:)`` at the byte that crosses the limit.
    public var maxLineBytes: Int
    /// The most data one event may carry, in bytes (8 MiB unless set). More fails the stream with
    /// ``ServerSentEventError/eventTooLarge(limit:)``.
    public var maxEventBytes: Int
    /// The longest silence a connection may keep — no byte at all, the head included — before it
    /// is taken for stalled (60 s unless set; `nil`: none). A stalled connection is closed and
    /// reconnected to like a dropped one, counting as a connection without an event; once
    /// ``reconnection`` allows no more, the stream fails with
    /// ``ServerSentEventError/stalled(idleTimeout:)``. The first connection is not retried: if it
    /// stalls before it opens, the stream fails at once. Timed on the client's scheduler. A server
    /// that sends a comment line now and then keeps an idle stream alive.
    public var idleTimeout: Duration?
    /// How the stream reconnects after its connection ends or drops, `nil` for never (the stream
    /// then finishes when its connection ends and fails when it fails).
    ///
    /// Of the policy, these are read:
    /// - ``RetryPolicy/maxAttempts``: reconnecting stops once that many connections in a row have
    ///   ended (or dropped, or stalled) without delivering an event; a connection that delivered
    ///   one starts the count again. The stream then fails with the last connection's error, with
    ///   ``ServerSentEventError/stalled(idleTimeout:)``, or with
    ///   ``ServerSentEventError/reconnectionsExhausted(attempts:)`` for a clean end;
    /// - the back-off (``RetryPolicy/baseDelay``, ``RetryPolicy/multiplier``,
    ///   ``RetryPolicy/maxDelay``, ``RetryPolicy/jitter``): the wait before reconnection number
    ///   `n` of a row. The first reconnection after a connection that delivered events waits the
    ///   server's `retry` when it sent one, else the back-off; each later one in a row waits the
    ///   longer of the two;
    /// - ``RetryPolicy/retryableURLErrorCodes``: which transport failures are a dropped connection
    ///   (by default a lost connection, a timeout, a refused connection, no network, a failed DNS
    ///   lookup); any other error fails the stream.
    ///
    /// Its status codes, methods, Retry-After limit and budget are not read: an answer other than
    /// `200` with `text/event-stream` never reconnects (`204` finishes the stream, as the
    /// specification says; anything else fails it).
    ///
    /// Unless set: 5 attempts, 3 s base, ×2, 60 s max, equal jitter (a wait of half to all of
    /// the ceiling).
    public var reconnection: RetryPolicy?
    /// The last event ID to resume from, sent as `Last-Event-ID` on the first connection (a
    /// stream continued after a relaunch); `nil` or empty sends none.
    public var lastEventID: String?

    /// Creates options; every parameter defaults to the value documented on its property.
    public init(
        maxLineBytes: Int = 1 << 20,
        maxEventBytes: Int = 8 << 20,
        idleTimeout: Duration? = .seconds(60),
        reconnection: RetryPolicy? = EventStreamOptions.defaultReconnection,
        lastEventID: String? = nil
    ) {
        self.maxLineBytes = maxLineBytes
        self.maxEventBytes = maxEventBytes
        self.idleTimeout = idleTimeout
        self.reconnection = reconnection
        self.lastEventID = lastEventID
    }

    /// The reconnection policy unless another is set: 5 attempts, 3 s base, ×2, 60 s max, equal
    /// jitter.
    public static let defaultReconnection = RetryPolicy(
        maxAttempts: 5, baseDelay: .seconds(3), multiplier: 2, maxDelay: .seconds(60), jitter: .equal
    )
}
