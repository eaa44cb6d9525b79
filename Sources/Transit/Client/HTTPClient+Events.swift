import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPClient {
    /// A signal of the Server-Sent Events of `request`: it connects when subscribed, delivers each
    /// event as the WHATWG specification dispatches it (see ``ServerSentEventParser``), and
    /// reconnects after a dropped connection, resuming with `Last-Event-ID`.
    ///
    /// ```swift
    /// client.events(URLRequest(url: feed))
    ///     .sink(receiveCompletion: { print($0) }) { event in print(event.id ?? "-", event.data) }
    /// ```
    ///
    /// Every connection sends `Accept: text/event-stream` and `Cache-Control: no-cache` (unless
    /// `request` sets them), and from the second on `Last-Event-ID` with the stream's last event ID
    /// when it is not empty. Each one goes through the client as a request of its own: the default
    /// headers, the monitors, the cooldowns and the rate limit, redirects, and the authorizer,
    /// which adds its credentials and, on a 401, renews them and connects once more.
    ///
    /// - A `200` with `Content-Type: text/event-stream` is the stream. When its connection ends
    ///   or drops (a transport failure in the policy's ``RetryPolicy/retryableURLErrorCodes``),
    ///   or stalls (see ``EventStreamOptions/idleTimeout``), the stream waits the server's `retry`
    ///   or the back-off of ``EventStreamOptions/reconnection`` on the client's scheduler, then
    ///   connects again; an event cut off by the drop is discarded and comes again from the
    ///   server, after the last event ID it was told. An event is delivered once per dispatch.
    /// - A `204` finishes the stream: the server has nothing more, and it is not reconnected to.
    /// - Another `200` fails with ``ServerSentEventError/notAnEventStream(contentType:)``, a
    ///   status of 400 or more with its ``HTTPError`` (with the first 64 KiB of its body), any
    ///   other with ``ServerSentEventError/unexpectedStatus(_:)``. None of them is reconnected.
    /// - The first connection is not retried: its failure is the stream's (compose `retry` for
    ///   that). A line or an event past the limits of `options` fails the stream with
    ///   ``ServerSentEventError``.
    ///
    /// Memory stays bounded by the limits, whatever the server sends. Cancelling closes the
    /// connection at once and drops a pending reconnection. The stream has no deadline.
    public func events(_ request: URLRequest, options: EventStreamOptions = EventStreamOptions()) -> Signal<ServerSentEvent, any Error> {
        let request = TransportRequest(request)
        return eventStream(options: options) { lastEventID, events in
            self.eventConnection(request, lastEventID: lastEventID, events: events)
        }
    }

    /// An event stream whose connections `connection` makes (given the last event ID and the
    /// request's sink), reported to the monitors as one request whatever the number of connections.
    func eventStream(
        options: EventStreamOptions,
        _ connection: @escaping @Sendable (_ lastEventID: String, _ events: HTTPEventSink?) -> Signal<AttemptPart, any Error>
    ) -> Signal<ServerSentEvent, any Error> {
        let stream: @Sendable (HTTPEventSink?) -> Signal<ServerSentEvent, any Error> = { events in
            EventStream(options: options, scheduler: self.scheduler) { lastEventID in connection(lastEventID, events) }.signal
        }
        guard events != nil else { return attached(stream(nil)) }
        return observed(RequestOptions(), endsWith: { _ in false }, stream)
    }

    /// One connection of an event stream: `request` with the event stream's header fields, through
    /// the client (the authorizer's renewal on 401 included), its parts with the request sent.
    func eventConnection(_ request: consuming TransportRequest, lastEventID: String, events: HTTPEventSink?) -> Signal<AttemptPart, any Error> {
        var request = request
        if request.value(forHTTPHeaderField: "Accept") == nil { request.setValue("text/event-stream", forHTTPHeaderField: "Accept") }
        if request.value(forHTTPHeaderField: "Cache-Control") == nil { request.setValue("no-cache", forHTTPHeaderField: "Cache-Control") }
        request.setValue(lastEventID.isEmpty ? nil : lastEventID, forHTTPHeaderField: "Last-Event-ID")
        let attempt: @Sendable (consuming TransportRequest) -> Signal<AttemptPart, any Error> = { request in
            self.prepared(request, events: events) { sent in
                self.parts(of: sent, options: RequestOptions(), deadline: nil, events: events).map { AttemptPart($0, sent: sent) }
            }
        }
        guard let authorizer else { return attempt(request) }
        return Self.authorized(request, by: authorizer, scheduler: scheduler, events: events, attempt: attempt)
    }
}
