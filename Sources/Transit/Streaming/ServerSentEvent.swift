/// One event of a `text/event-stream` response (Server-Sent Events), as the WHATWG HTML
/// specification's "server-sent events" section dispatches it: at a blank line, with the data
/// lines gathered since the previous one.
///
/// ```swift
/// client.events(URLRequest(url: feed)).sink(receiveCompletion: { print($0) }) { event in
///     print(event.event, event.id ?? "-", event.data)
/// }
/// ```
public struct ServerSentEvent: Sendable, Hashable {
    /// The stream's last event ID when the event was dispatched: the value of the latest `id`
    /// field (of this event or an earlier one: it persists), `nil` while it is empty. This is what
    /// a reconnection sends as `Last-Event-ID`.
    public var id: String?
    /// The event type: the `event` field's value, `"message"` when the event has none.
    public var event: String
    /// The event's `data` lines joined with `"\n"` (no line break at the end).
    public var data: String
    /// The reconnection time the server last set with a `retry` field (on this event or an
    /// earlier one, on this connection or an earlier one), `nil` while it has set none.
    public var retry: Duration?

    /// Creates an event.
    public init(id: String? = nil, event: String = "message", data: String, retry: Duration? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }
}
