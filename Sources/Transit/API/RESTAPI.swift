import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Changes a request before it is sent. Runs inside the subscription, on every attempt, so a
/// retried request reads fresh state (a new access token, a new timestamp). Throwing fails the
/// signal with the thrown error and sends nothing.
///
/// The request is passed `consuming`: the modifier holds the only reference to it. A function
/// taking a plain `URLRequest` converts to this type. Where every copy counts, hand it on with
/// `consume` — `{ request in try (consume request).addingBearerAuthorization(accessToken: t) }` —
/// and the fluent helpers change it in place; without `consume` Swift keeps the parameter alive
/// to the end of the closure, so the first change copies the whole request (BENCHMARKS.md).
public typealias RequestModifier = @Sendable (consuming URLRequest) throws -> URLRequest

/// A REST service: a base URL and the client that sends its requests.
///
/// Conform a type and build request signals with the verbs:
///
/// ```swift
/// struct LivePostService: RESTAPI {
///     let baseURL: String
///     let client: HTTPClient
///
///     var posts: Signal<[Post], any Error> {
///         return get(endpoint: "posts") { $0.receivingJSON() }
///             .catchHTTPErrors()
///             .map(\.data)
///             .decode([Post].self, decoder: JSONDecoder())
///     }
///
///     func publish(_ post: NewPost) -> Signal<HTTPResponse, any Error> {
///         self.post(endpoint: "posts", body: .json(post)).catchHTTPErrors()
///     }
/// }
/// ```
///
/// (A computed property whose body starts with `get(` is read as a getter declaration: write
/// `return get(…)` or `self.get(…)`.)
///
/// Every verb returns a cold signal: nothing is sent until it is subscribed, and every
/// subscription (every retry) builds the URL, prepares the body, runs the modifier and sends
/// again. A base URL without an http(s) scheme and a host, or an endpoint that cannot form a URL,
/// fails the signal with `URLError(.badURL)` and sends nothing; a base URL with user-info
/// (`https://user:password@…`) fails it with ``URLRequestError/credentialsInURL(_:)`` (the URL
/// redacted) and sends nothing: give credentials to the client's ``Authorizer`` instead.
///
/// A body is one parameter, `body:`, which takes `Data` or a ``RequestBody``: `.data`, `.json`,
/// `.form`, `.multipart` or `.file` (see ``RequestBody`` for what each sends).
public protocol RESTAPI: Sendable {
    /// The service's base URL, such as `https://api.example.com/v1`. Endpoints are appended to it.
    var baseURL: String { get }
    /// The client that sends the requests. ``HTTPClient/shared`` unless the service names one.
    var client: HTTPClient { get }
}

extension RESTAPI {
    public var client: HTTPClient { .shared }

    /// A signal that sends a request with any method and delivers the buffered response.
    ///
    /// On every subscription it builds the URL, sets the method, prepares `body` (its
    /// `Content-Type`, and its bytes when they are held in memory), runs `modifier`, and hands the
    /// result to ``client`` (a file body, or a multipart form written to a temporary file, is
    /// streamed from disk by ``HTTPClient/send(_:bodyFile:options:)``). If the URL cannot be built
    /// (`URLError(.badURL)`, or ``URLRequestError/credentialsInURL(_:)`` for a base URL with
    /// user-info), the method is not a valid token (``URLRequestError/invalidMethod(_:)``), the
    /// body cannot be prepared (an encoding error, an unreadable file) or the modifier throws,
    /// the signal fails with that error and nothing is sent.
    ///
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - endpoint: a path relative to ``baseURL``, which may carry a query (`posts?userId=1`).
    ///     It must already be percent-encoded; add query values that need encoding with
    ///     `URLRequest.addingQueryItem(name:value:)` in the modifier.
    ///   - body: the request body, if any: `Data`, or a ``RequestBody`` such as `.json(value)`.
    ///   - options: this request's response-size limit, deadline and redirect policy, where
    ///     they differ from the client's.
    ///   - modifier: changes the request before every attempt, after the body is prepared (so it
    ///     may replace the body's `Content-Type`).
    public func request(
        method: HTTPMethod,
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        send(method: method, endpoint: endpoint, body: body, modifier: modifier) { client, request in
            client.send(request, options: options)
        }
    }

    /// A GET request. See ``request(method:endpoint:body:options:modifier:)``.
    public func get(
        endpoint: String,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .get, endpoint: endpoint, options: options, modifier: modifier)
    }

    /// A HEAD request. See ``request(method:endpoint:body:options:modifier:)``.
    public func head(
        endpoint: String,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .head, endpoint: endpoint, options: options, modifier: modifier)
    }

    /// A DELETE request. See ``request(method:endpoint:body:options:modifier:)``.
    public func delete(
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .delete, endpoint: endpoint, body: body, options: options, modifier: modifier)
    }

    /// A POST request. See ``request(method:endpoint:body:options:modifier:)``.
    ///
    /// ```swift
    /// api.post(endpoint: "posts", body: .json(NewPost(title: "Hi")))
    /// api.post(endpoint: "oauth/token", body: .form(["grant_type": "password", "username": user, "password": password]))
    /// ```
    public func post(
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .post, endpoint: endpoint, body: body, options: options, modifier: modifier)
    }

    /// A PUT request. See ``request(method:endpoint:body:options:modifier:)``.
    public func put(
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .put, endpoint: endpoint, body: body, options: options, modifier: modifier)
    }

    /// A PATCH request. See ``request(method:endpoint:body:options:modifier:)``.
    public func patch(
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponse, any Error> {
        request(method: .patch, endpoint: endpoint, body: body, options: options, modifier: modifier)
    }

    /// A signal that sends a request and delivers its response as it arrives — the head, then
    /// each body chunk — without buffering it. See ``HTTPClient/stream(_:bodyFile:options:)``;
    /// the request is built as by ``request(method:endpoint:body:options:modifier:)``.
    ///
    /// ```swift
    /// api.stream(endpoint: "export.ndjson")
    ///     .sink(receiveCompletion: { print($0) }) { part in
    ///         if case .body(let chunk) = part { parser.feed(chunk) }
    ///     }
    /// ```
    public func stream(
        method: HTTPMethod = .get,
        endpoint: String,
        body: (any RequestBodyConvertible)? = nil,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<HTTPResponsePart, any Error> {
        send(method: method, endpoint: endpoint, body: body, modifier: modifier) { client, request in
            client.stream(request, options: options)
        }
    }

    /// A signal of the Server-Sent Events of a GET to `endpoint`, reconnecting with
    /// `Last-Event-ID` after a dropped connection. See ``HTTPClient/events(_:options:)``; the
    /// request is built as by ``request(method:endpoint:body:options:modifier:)``, again for every
    /// connection (so `modifier` runs on each reconnection too).
    ///
    /// ```swift
    /// api.events(endpoint: "feed")
    ///     .sink(receiveCompletion: { print($0) }) { event in print(event.event, event.data) }
    /// ```
    public func events(
        endpoint: String,
        options: EventStreamOptions = EventStreamOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<ServerSentEvent, any Error> {
        let api = self
        return Signal(deferred: {
            api.client.eventStream(options: options) { lastEventID, events in
                api.send(method: .get, endpoint: endpoint, body: nil, modifier: modifier) { client, request in
                    client.eventConnection(request, lastEventID: lastEventID, events: events)
                }
            }
        })
    }

    /// A signal that downloads the body of a GET to the file `destination`, with progress; the
    /// file appears under its name only once complete. See ``HTTPClient/download(_:to:options:)``.
    public func download(
        endpoint: String,
        to destination: URL,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<DownloadEvent, any Error> {
        send(method: .get, endpoint: endpoint, body: nil, modifier: modifier) { client, request in
            client.download(request, to: destination, options: options)
        }
    }

    /// A signal that sends a request with a body and reports the body's progress as it is sent,
    /// then the buffered response. See ``HTTPClient/upload(_:bodyFile:options:)``; the request is
    /// built as by ``request(method:endpoint:body:options:modifier:)``, and each new subscription
    /// (a `retry`) counts as a new send of the body (``UploadProgress/attempt``).
    ///
    /// ```swift
    /// api.upload(endpoint: "photos", body: .multipart(form))
    ///     .sink(receiveCompletion: { print($0) }) { event in
    ///         if case .progress(let progress) = event { print(progress.bytesSent, progress.expectedBytes ?? -1) }
    ///     }
    /// ```
    public func upload(
        method: HTTPMethod = .post,
        endpoint: String,
        body: any RequestBodyConvertible,
        options: RequestOptions = RequestOptions(),
        modifier: RequestModifier? = nil
    ) -> Signal<UploadEvent, any Error> {
        let sends = UploadSends()
        return send(method: method, endpoint: endpoint, body: body, modifier: modifier) { client, request in
            client.upload(request, options: options, sends: sends)
        }
    }

    /// The cold signal behind every verb. On every subscription: the URL from ``baseURL`` and
    /// `endpoint`, the method (checked), the body prepared, `modifier`; then `through` hands the
    /// request, and the file its body streams from (if any), to the client.
    ///
    /// The request is handed on `consuming` from where it is built to the user's modifier and the
    /// client, so only one reference to it exists at each step and every change is made in place:
    /// on Linux a `URLRequest` that is not uniquely referenced copies its whole `NSURLRequest` on
    /// every change.
    private func send<Output>(
        method: HTTPMethod,
        endpoint: String,
        body: (any RequestBodyConvertible)?,
        modifier: RequestModifier?,
        through: @escaping @Sendable (HTTPClient, consuming TransportRequest) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        // `self` is read inside the subscription, so a computed `baseURL` or `client` is read
        // again on every attempt.
        let api = self
        let body = body?.requestBody
        return Signal(tryDeferred: {
            let url = try BuiltURLs.url(base: api.baseURL, endpoint: endpoint)
            guard HTTPSyntax.isToken(method.rawValue) else { throw URLRequestError.invalidMethod(method.rawValue) }
            // Without a body or a modifier, no `URLRequest` is made at all.
            guard body != nil || modifier != nil else { return through(api.client, TransportRequest(method: method, url: url)) }
            var request = URLRequest(url: url)
            if method != .get { request.httpMethod = method.rawValue }  // GET is the default
            let modify = modifier ?? { $0 }
            guard let body else { return through(api.client, TransportRequest(try modify(consume request))) }
            return body.sending(try modify(try body.prepared(consume request)), by: api.client) { client, request, file in
                through(client, TransportRequest(request, bodyFile: file))
            }
        })
    }
}
