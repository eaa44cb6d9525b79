import Foundation

/// Why a stream of Server-Sent Events failed, other than the transport's or an HTTP status's own
/// errors (a status of 400 or more fails with its ``HTTPError``).
///
/// The two limits keep a stream's memory bounded whatever the server sends: a line or an event
/// past its limit fails the stream at the byte that crosses it, and nothing more is read.
public enum ServerSentEventError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError, DescribedError {
    /// A line (without its line break) is longer than `limit` bytes.
    case lineTooLong(limit: Int)
    /// An event's data (its `data` lines joined with line breaks) is longer than `limit` bytes.
    case eventTooLarge(limit: Int)
    /// The response is `200` but not `text/event-stream`; `contentType` is its `Content-Type`
    /// field, `nil` when it has none.
    case notAnEventStream(contentType: String?)
    /// The response's status is neither `200` (the stream), `204` (no more events: the stream
    /// finishes) nor `400` or more (an ``HTTPError``).
    case unexpectedStatus(Int)
    /// No byte arrived for `idleTimeout`, on as many connections in a row as reconnection allows.
    case stalled(idleTimeout: Duration)
    /// The stream ended, once more than reconnection allows, without an event on the way: a server
    /// that accepts and closes at once is not reconnected to for ever.
    case reconnectionsExhausted(attempts: Int)

    public var description: String {
        switch self {
        case .lineTooLong(let limit):
            return "The event stream sent a line longer than \(limit) bytes, so the stream was stopped. "
                + "Raise EventStreamOptions.maxLineBytes if the server's lines are that long."
        case .eventTooLarge(let limit):
            return "The event stream sent an event with more than \(limit) bytes of data, so the stream was stopped. "
                + "Raise EventStreamOptions.maxEventBytes if the server's events are that large."
        case .notAnEventStream(let contentType):
            return "The response is not an event stream: its Content-Type is "
                + (contentType.map { "\"\($0)\"" } ?? "missing") + ", not text/event-stream. Check the URL and the server."
        case .unexpectedStatus(let status):
            return "The event stream was answered \(status), not 200 with text/event-stream. Check the URL and the server."
        case .stalled(let idleTimeout):
            return "The event stream sent nothing for \(idleTimeout) on every connection reconnection allowed, "
                + "so it was stopped. Raise EventStreamOptions.idleTimeout if the server is silent for longer."
        case .reconnectionsExhausted(let attempts):
            return "The event stream ended \(attempts) times in a row without an event, so it was not reconnected again."
        }
    }
}
