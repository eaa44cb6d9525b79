import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The production transport: one long-lived `URLSession` driven by a session delegate.
///
/// Every subscription to ``exchange(_:)`` creates one task (an upload task for a body file, a
/// data task otherwise). The delegate of the session keeps the state of each task (keyed by its task
/// identifier) and delivers the head as soon as `URLSession` has it, then every body chunk as it
/// arrives, then `finished` — or fails with the `URLError`. Nothing is buffered here.
///
/// - Redirects are not followed by the session: the 3xx is delivered as the response, and
///   ``HTTPClient`` follows it by its ``RedirectPolicy`` (so Linux Foundation, which copies every
///   header to the redirected request, never sends credentials to another origin).
/// - Uploads from a file use `uploadTask(with:fromFile:)`, which streams the file.
/// - Upload progress: the body bytes `URLSession` reports sent (`didSendBodyData`) are passed to
///   the request's ``TransportRequest/bodyProgress``.
///
/// - Cancellation: cancelling the subscription forgets the task's state at once, so nothing is
///   delivered after the cancel, and cancels the `URLSessionTask` (its socket is closed) without
///   waiting for `URLSession`: the thread that cancels is never blocked.
/// - Authentication challenges: a 401 or 407 is delivered as the response (status, headers and
///   body), whatever its `WWW-Authenticate` or `Proxy-Authenticate` scheme, as soon as it is
///   complete. The transport never answers a challenge with a credential, from the URL, the
///   configuration's `URLCredentialStorage` or anywhere else: credentials are the client's to
///   add (an ``Authorizer``), and its 401 handling sees every challenge. TLS challenges (server
///   trust, client certificates) get `URLSession`'s default handling, except server trust for a
///   host that the transport's ``ServerTrustPolicy`` covers.
/// - Server trust: with a ``ServerTrustPolicy`` (`serverTrust:`), a request to a covered host is
///   checked against its rule. On Apple platforms the session's server-trust challenge evaluates
///   the chain with the rule's roots added to the system's, then its pins, and cancels the
///   connection on a failure (the request fails with `URLError(.cancelled)` and nothing is sent);
///   this path is not exercised by the project's continuous integration, which runs on Linux. On
///   Linux, `URLSession` has no server-trust hook, so a request to a covered host fails with
///   ``ServerTrustError`` (``ServerTrustError/Reason/notEnforceable(transport:because:)``) before
///   any connection is opened. A plain `http` request to a covered host fails with
///   ``ServerTrustError/Reason/notEncrypted`` on every platform. Other hosts are unaffected.
/// - Compressed bodies: `URLSession` decodes `Content-Encoding: gzip` and `deflate` (on Linux
///   whatever `Accept-Encoding` the request sent), so the body parts are decoded bytes, and a
///   size limit counts those. On Linux, libcurl inflates everything the socket has ready in one
///   call that a cancel cannot interrupt: a task given up mid-body (over the size limit, past a
///   deadline, cancelled) may go on being inflated until the server's bytes run out, costing
///   CPU time, but its chunks are dropped as they come, so memory stays bounded.
/// - Non-HTTP responses (a `data:` URL, a custom `URLProtocol` returning a plain `URLResponse`)
///   fail with `URLError(.badServerResponse)`. A request without a URL fails with
///   `URLError(.badURL)` without creating a task.
/// - Errors from `URLSession` are delivered as `URLError` (`.cancelled`, `.timedOut`,
///   `.cannotConnectToHost`, `.networkConnectionLost`, …). On Linux, a connection closed
///   before or during the response and a reply that is not HTTP come from libcurl as
///   `.badServerResponse`, `.unknown` and `.unsupportedURL`; they are delivered as
///   `.networkConnectionLost` and `.cannotParseResponse`, as on Darwin, so retry policies see
///   the same codes everywhere.
/// - Byte counts and timings of every exchange are reported to the ``HTTPEventMonitor``s of the
///   ``HTTPClient`` that uses the transport (``HTTPAttemptMetrics``), whatever the transport:
///   the transport itself observes nothing.
///
/// Linux (swift-corelibs-foundation) compatibility: the transport uses only what works there —
/// one session-wide delegate (no per-task delegates), data tasks (no `bytes(for:)`), and no
/// `waitsForConnectivity` (a request with no route fails at once instead of waiting).
///
/// Lifetime: `URLSession` retains its delegate strongly until it is invalidated. The delegate
/// here does not reference the transport, and the transport invalidates its session
/// (`invalidateAndCancel()`) in `deinit`, so releasing the transport releases the session and
/// its delegate too — nothing leaks. A subscription in flight keeps its transport alive until it
/// ends, so a request is never cut off because the last reference to the transport went away
/// (a signal returned by ``exchange(_:)`` keeps the transport alive as well).
///
/// Thread safety: all task state is behind a lock; ``exchange(_:)`` may be called from any thread,
/// and events arrive on the delegate queue of the session.
public final class URLSessionTransport: HTTPTransport {
    /// A transport with ``defaultConfiguration``.
    public static let shared = URLSessionTransport()

    /// The configuration of ``shared`` and of a transport made without one: Foundation's
    /// `.default`, without a cookie jar and without `URLCache`, with up to 64 connections per
    /// host.
    ///
    /// - **No cookies**: nothing is stored from `Set-Cookie` and no `Cookie` header is added.
    ///   Transit sends the credentials a request carries, to where the request goes; a cookie jar
    ///   adds credentials the caller never set, to whatever host set them. It is also the largest
    ///   single cost of a request on Linux: Foundation parses every response header line as a
    ///   possible cookie unless the accept policy is `.never` (BENCHMARKS.md measures the cost).
    /// - **No `URLCache`**: responses are cached only where the caller asks for it (`TransitCache`'s
    ///   HTTP cache, which is bounded and checks what it reads back). Foundation's shared cache
    ///   would store authenticated responses on disk by default and look every request up in it.
    ///
    /// - **64 connections per host** (`httpMaximumConnectionsPerHost`), where Foundation allows
    ///   6: a service calls few hosts with many requests at once, and a request beyond the limit
    ///   waits in `URLSession` for a connection to free up. More connections cost a socket each
    ///   (and on the server, a connection slot), opened only when that many requests run at once
    ///   and closed when idle; fewer make concurrent requests queue. Lower it for a server that
    ///   limits connections per client; raise it for more concurrency to one host.
    ///
    /// Waiting for a connection counts as time spent: ``HTTPClient``'s deadline starts when the
    /// request is subscribed, and `URLRequest.timeoutInterval` (the idle timeout) runs from when
    /// the task starts, so a request that queues behind the limit uses both while it waits.
    ///
    /// To have a cookie jar or a cache, pass a configuration of your own
    /// (`URLSessionConfiguration.default` has both).
    public static var defaultConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 64
        return configuration
    }

    private let session: URLSession
    private let delegate: SessionDelegate
    private let configuration: URLSessionConfiguration
    private let usesDownloadTasks: Bool
    /// The server-trust policy given to the initialiser, if any.
    let serverTrust: ServerTrustPolicy?
    /// The session of downloads (``TransportRequest/responseBodyFile``), made on first use. It is
    /// a session of its own because its delegate must not be a data delegate: Linux Foundation
    /// hands the body of a redirect that is not followed to the data delegate with a force-unwrap
    /// of the task as a data task, which traps for a download task.
    private let downloads = Locked<(session: URLSession, delegate: DownloadDelegate)?>(nil)

    /// Creates a transport with its own session built from `configuration`.
    ///
    /// The configuration is copied by `URLSession`: later changes to it have no effect. Leave
    /// `waitsForConnectivity` off (it is not implemented on Linux). To count the bytes and time
    /// the exchanges, give the ``HTTPClient`` that uses it an ``HTTPEventMonitor``.
    ///
    /// - Parameters:
    ///   - configuration: the configuration of the session; ``defaultConfiguration`` (no cookie jar, no
    ///     `URLCache`) by default.
    ///   - downloadTasks: whether ``HTTPClient/download(_:to:options:)`` runs as a
    ///     `URLSessionDownloadTask` that writes the body itself (``writesResponseBodiesToFiles``)
    ///     instead of a data task whose chunks the client writes. Off by default; see
    ///     ``writesResponseBodiesToFiles`` for the trade.
    ///   - serverTrust: roots and pins per host (see ``ServerTrustPolicy``); none by default. On
    ///     Linux a request to a covered host fails with ``ServerTrustError`` without being sent.
    public init(
        configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration,
        downloadTasks: Bool = false,
        serverTrust: ServerTrustPolicy? = nil
    ) {
        usesDownloadTasks = downloadTasks
        self.serverTrust = serverTrust
        delegate = SessionDelegate(serverTrust: serverTrust)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        // The session keeps its own copy; this one makes the download session the same way.
        self.configuration = session.configuration
    }

    deinit {
        // URLSession keeps its delegate until invalidated; this breaks session -> delegate.
        session.invalidateAndCancel()
        downloads.withLock { $0?.session.invalidateAndCancel() }
    }

    /// The number of requests in flight (subscribed, not yet finished, failed or cancelled).
    var activeTaskCount: Int {
        delegate.table.activeTaskCount + (downloads.withLock { $0?.delegate.table.activeTaskCount } ?? 0)
    }

    private var downloadSession: (session: URLSession, delegate: DownloadDelegate) {
        downloads.withLock { downloads in
            if let downloads { return downloads }
            let delegate = DownloadDelegate(serverTrust: serverTrust)
            let made = (URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil), delegate)
            downloads = made
            return made
        }
    }

    /// Whether a request with a ``TransportRequest/responseBodyFile`` runs as a
    /// `URLSessionDownloadTask`, which writes the body on `URLSession`'s own I/O path: `true`
    /// when the transport was made with `downloadTasks: true`. Otherwise the response body file
    /// is ignored and the body arrives as parts, which ``HTTPClient`` writes.
    ///
    /// The trade on Linux: a data task's delegate cannot slow the network down. Foundation reads
    /// the socket as fast as it can and queues every chunk for the delegate, so a disk slower than
    /// the network turns into memory. A download task writes each chunk before it reads the next,
    /// so memory stays bounded whatever the disk, but Linux Foundation opens the file and queues a
    /// delegate operation for every 16 KiB chunk, which costs more CPU per byte than the data path
    /// (BENCHMARKS.md, "Downloads as `URLSession` download tasks", has the numbers). Linux
    /// Foundation also gives a download task's response only when the body is
    /// complete, so its head comes at the end (progress first); on Apple platforms it comes with
    /// the first bytes written. An upload from a file (``TransportRequest/bodyFile``) always
    /// delivers its response as parts.
    ///
    /// A download task's body goes first to a file `URLSession` makes in the system's temporary
    /// folder, which it hands to the transport when the task completes. Linux Foundation leaves
    /// that file behind when it never hands it over: a task cancelled mid-body, or a 401 whose
    /// challenge ends the task. The transport cannot name that file, so it stays in the temporary
    /// folder until the system clears it. Data tasks (the default) write nothing of their own.
    public var writesResponseBodiesToFiles: Bool { usesDownloadTasks }

    /// `request` with its idle timeout as Linux Foundation can apply it.
    ///
    /// Linux Foundation hands libcurl `Int(timeoutInterval)` seconds: a fraction is cut off, and a
    /// timeout below one second becomes zero, which libcurl reads as "time out at once". Rounding
    /// up to whole seconds keeps the idle timeout at least as long as asked (at most a second
    /// longer). Apple platforms apply the fraction as given.
    static func withWholeSecondTimeout(_ request: URLRequest) -> URLRequest {
        #if canImport(FoundationNetworking)
        let timeout = request.timeoutInterval
        let whole = timeout.rounded(.up)
        guard whole != timeout, whole.isFinite, whole > 0 else { return request }
        var rounded = request
        rounded.timeoutInterval = whole
        return rounded
        #else
        return request
        #endif
    }

    /// Why a request to `url` must not be sent under the server-trust policy, or `nil`.
    private func refusal(of url: URL) -> ServerTrustError? {
        guard let serverTrust, let host = url.host, serverTrust.rule(for: host) != nil else { return nil }
        guard url.scheme?.lowercased() == "https" else {
            return ServerTrustError(host: host, reason: .notEncrypted)
        }
        #if canImport(FoundationNetworking)
        return ServerTrustError(host: host, reason: .notEnforceable(
            transport: "URLSessionTransport on Linux",
            because: "swift-corelibs-foundation's URLSession offers no server-trust hook"
        ))
        #else
        return nil
        #endif
    }

    /// A signal that sends `request` when subscribed, and again on every subscription, and
    /// delivers the response as parts (see ``HTTPTransport``).
    ///
    /// Cancelling the subscription cancels the task; no event follows.
    public func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [self] observer in
            let urlRequest = Self.withWholeSecondTimeout(request.urlRequest)
            guard let url = urlRequest.url else {
                observer.fail(URLError(.badURL))
                return nil
            }
            if let refusal = refusal(of: url) {
                observer.fail(refusal)
                return nil
            }
            let table: URLSessionTaskTable
            let task: URLSessionTask
            var destination: ResponseBodyFile?
            if let file = request.bodyFile {
                (table, task) = (delegate.table, session.uploadTask(with: urlRequest, fromFile: file))
            } else if usesDownloadTasks, let file = request.responseBodyFile {
                let downloads = downloadSession
                (table, task, destination) = (downloads.delegate.table, downloads.session.downloadTask(with: urlRequest), file)
            } else {
                (table, task) = (delegate.table, session.dataTask(with: urlRequest))
            }
            table.register(task.taskIdentifier, URLSessionTaskTable.TaskState(request: urlRequest, observer: observer, destination: destination, bodyProgress: request.bodyProgress))
            task.resume()
            // Capturing `self` keeps the transport (so its sessions) alive while the request runs;
            // the teardown is released as soon as the subscription ends.
            return { [self] in
                // A task that already ended was forgotten by the delegate: cancelling it would
                // only cost a trip through the work queue of `URLSession`.
                withExtendedLifetime(self) {
                    if table.cancel(task) { table.cancelTask(task) }
                }
            }
        }
    }
}
