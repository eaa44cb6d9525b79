import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The production transport: one long-lived `URLSession` driven by a session delegate.
///
/// Every subscription to ``exchange(_:)`` creates one task (an upload task for a body file, a
/// data task otherwise). The session's delegate keeps the state of each task (keyed by its task
/// identifier) and delivers the head as soon as `URLSession` has it, then every body chunk as it
/// arrives, then `finished` — or fails with the `URLError`. Nothing is buffered here.
///
/// - Redirects are not followed by the session: the 3xx is delivered as the response, and
///   ``HTTPClient`` follows it by its ``RedirectPolicy`` (so Linux Foundation, which copies every
///   header to the redirected request, never sends credentials to another origin).
/// - Uploads from a file use `uploadTask(with:fromFile:)`, which streams the file.
///
/// - Cancellation: cancelling the subscription cancels the `URLSessionTask` (its socket is
///   closed) and forgets the task's state at once, so nothing is delivered after the cancel.
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
/// Thread safety: all task state is behind a `Locked`; `send` may be called from any thread and
/// events arrive on the session's delegate queue.
public final class URLSessionTransport: HTTPTransport {
    /// A transport with ``defaultConfiguration``.
    public static let shared = URLSessionTransport()

    /// The configuration of ``shared`` and of a transport made without one: Foundation's
    /// `.default`, without a cookie jar and without `URLCache`.
    ///
    /// - **No cookies**: nothing is stored from `Set-Cookie` and no `Cookie` header is added.
    ///   Transit sends the credentials a request carries, to where the request goes; a cookie jar
    ///   adds credentials the caller never set, to whatever host set them. It is also the largest
    ///   single cost of a request on Linux: Foundation parses every response header line as a
    ///   possible cookie (about 290,000 instructions per 10-header response, a quarter of
    ///   `URLSession`'s own cost; BENCHMARKS.md), unless the accept policy is `.never`.
    /// - **No `URLCache`**: responses are cached only where the caller asks for it (`TransitCache`'s
    ///   HTTP cache, which is bounded and checks what it reads back). Foundation's shared cache
    ///   would store authenticated responses on disk by default and look every request up in it.
    ///
    /// To have either, pass a configuration of your own (`URLSessionConfiguration.default` has
    /// both).
    public static var defaultConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        return configuration
    }

    private let session: URLSession
    private let delegate: SessionDelegate
    private let configuration: URLSessionConfiguration
    private let usesDownloadTasks: Bool
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
    ///   - configuration: the session's configuration; ``defaultConfiguration`` (no cookie jar, no
    ///     `URLCache`) by default.
    ///   - downloadTasks: whether ``HTTPClient/download(_:to:options:)`` runs as a
    ///     `URLSessionDownloadTask` that writes the body itself (``writesResponseBodiesToFiles``)
    ///     instead of a data task whose chunks the client writes. Off by default; see
    ///     ``writesResponseBodiesToFiles`` for the trade.
    public init(configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration, downloadTasks: Bool = false) {
        usesDownloadTasks = downloadTasks
        delegate = SessionDelegate()
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
    public var activeTaskCount: Int {
        delegate.table.activeTaskCount + (downloads.withLock { $0?.delegate.table.activeTaskCount } ?? 0)
    }

    private var downloadSession: (session: URLSession, delegate: DownloadDelegate) {
        downloads.withLock { downloads in
            if let downloads { return downloads }
            let delegate = DownloadDelegate()
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
    /// The trade, measured on Linux (1 GiB from nginx over loopback, release build): a data
    /// task's delegate cannot slow the network down. Foundation reads the socket as fast as it
    /// can and queues every chunk for the delegate, so a disk slower than the network turns into
    /// memory (a 1 GiB download: 51–65 MiB peak at the median, 183 MiB when the disk stalled). A
    /// download task writes each chunk before it reads the next, so memory stays bounded
    /// whatever the disk (67.5–67.9 MiB, Foundation's own floor being 54 MiB), but Linux Foundation
    /// opens the file and queues a delegate operation for every 16 KiB chunk: 5.7–7.3 s of CPU
    /// per GiB against 3.0 s for `downloadTask(with:completionHandler:)` and 3.6 s for the data
    /// path. Linux Foundation also gives a download task's response only when the body is
    /// complete, so its head comes at the end (progress first); on Apple platforms it comes with
    /// the first bytes written. An upload from a file (``TransportRequest/bodyFile``) always
    /// delivers its response as parts.
    public var writesResponseBodiesToFiles: Bool { usesDownloadTasks }

    /// A signal that sends `request` when subscribed, and again on every subscription, and
    /// delivers the response as parts (see ``HTTPTransport``).
    ///
    /// Cancelling the subscription cancels the task; no event follows.
    public func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [self] observer in
            let urlRequest = request.urlRequest
            guard urlRequest.url != nil else {
                observer.fail(URLError(.badURL))
                return nil
            }
            let table: TaskTable
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
            table.register(task.taskIdentifier, TaskTable.TaskState(request: urlRequest, observer: observer, destination: destination))
            task.resume()
            // Capturing `self` keeps the transport (so its sessions) alive while the request runs;
            // the teardown is released as soon as the subscription ends.
            return { [self] in
                // A task that already ended was forgotten by the delegate: cancelling it would
                // only cost a trip through the session's work queue.
                withExtendedLifetime(self) {
                    if table.cancel(task) { task.cancel() }
                }
            }
        }
    }
}

/// The tasks of one session: per-task state keyed by task identifier, and what both delegates
/// do with it.
///
/// Thread safety: state is behind a `Locked`; observers are called outside it.
private final class TaskTable: Sendable {
    struct TaskState: Sendable {
        let request: URLRequest
        let observer: Observer<HTTPResponsePart, any Error>
        /// Where a download task's body goes; `nil` for data and upload tasks.
        let destination: ResponseBodyFile?
        var headDelivered = false
        /// The response was not HTTP: the task was cancelled and fails with `.badServerResponse`.
        var notHTTP = false
        /// The downloaded file could not be moved to the destination.
        var moveError: (any Error)?

        init(request: URLRequest, observer: Observer<HTTPResponsePart, any Error>, destination: ResponseBodyFile?) {
            self.request = request
            self.observer = observer
            self.destination = destination
        }
    }

    private let tasks = Locked<[Int: TaskState]>([:])

    var activeTaskCount: Int {
        tasks.withLock { $0.count }
    }

    func register(_ id: Int, _ state: TaskState) {
        tasks.withLock { $0[id] = state }
    }

    /// Forgets `task` (its subscription was cancelled or ended). Returns whether it was still
    /// running.
    func cancel(_ task: URLSessionTask) -> Bool {
        tasks.withLock { $0.removeValue(forKey: task.taskIdentifier) } != nil
    }

    func state(of task: URLSessionTask) -> TaskState? {
        tasks.withLock { $0[task.taskIdentifier] }
    }

    /// Delivers the head of `task`, or fails it if the response is not HTTP.
    func receiveHead(_ response: URLResponse, of task: URLSessionTask) -> URLSession.ResponseDisposition {
        let observer = tasks.withLock { tasks -> Observer<HTTPResponsePart, any Error>? in
            guard tasks[task.taskIdentifier] != nil else { return nil }
            tasks[task.taskIdentifier]!.headDelivered = true
            return tasks[task.taskIdentifier]!.observer
        }
        guard let observer else { return .cancel }
        guard let http = response as? HTTPURLResponse else {
            // Fails in didCompleteWithError, once the task is cancelled.
            tasks.withLock {
                $0[task.taskIdentifier]?.headDelivered = false
                $0[task.taskIdentifier]?.notHTTP = true
            }
            return .cancel
        }
        observer.send(.head(HTTPResponseHead(http)))
        return .allow
    }

    func receive(_ data: Data, of task: URLSessionTask) {
        guard !data.isEmpty else { return }
        let observer = tasks.withLock { $0[task.taskIdentifier]?.observer }
        observer?.send(.body(data))
    }

    /// A download task wrote `total` bytes of `expected`.
    func written(_ total: Int64, of expected: Int64, by task: URLSessionDownloadTask) {
        guard let state = state(of: task), !state.notHTTP else { return }
        // A download task's delegate is not given the response. On Darwin it is known when the
        // first bytes are written, and delivered then; Linux Foundation sets it only when the
        // body is complete, so there the head is delivered by `complete`.
        #if !canImport(FoundationNetworking)
        if !state.headDelivered, let response = task.response {
            guard receiveHead(response, of: task) == .allow else {
                task.cancel()
                return
            }
        }
        #endif
        state.destination?.progress(total, expected >= 0 ? expected : nil)
    }

    /// A download task's body is complete at `location`: moved to the task's destination.
    func finish(_ task: URLSessionDownloadTask, at location: URL) {
        guard let destination = state(of: task)?.destination else { return }
        do {
            try Self.move(location, to: destination.url)
        } catch {
            tasks.withLock { $0[task.taskIdentifier]?.moveError = error }
            return
        }
        // Cancelled while the file was moved: its owner may already have cleaned up, so the
        // file it no longer waits for is removed here.
        if state(of: task) == nil {
            try? FileManager.default.removeItem(at: destination.url)
        }
    }

    /// Moves the downloaded file `location` to `destination`, replacing any file there: a rename,
    /// or a copy when the two are on different file systems.
    private static func move(_ location: URL, to destination: URL) throws {
        _ = unlink(destination.path)
        if rename(location.path, destination.path) == 0 { return }
        let code = errno
        guard code == EXDEV else {
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: destination.path,
                NSLocalizedDescriptionKey: "Cannot move the downloaded body to \(destination.path): \(String(cString: strerror(code))).",
            ])
        }
        try FileManager.default.moveItem(at: location, to: destination)
    }

    func complete(_ task: URLSessionTask, error: (any Error)?) {
        guard let state = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        // `task.response` takes a trip through the session's work queue: it is read only when a
        // late head needs it.
        if let error, !state.notHTTP {
            state.observer.fail(Self.urlError(error))
        } else if let moveError = state.moveError {
            state.observer.fail(moveError)
        } else if !state.notHTTP, state.headDelivered {
            state.observer.finish()
        } else if !state.notHTTP, let http = task.response as? HTTPURLResponse {
            // A head that never went through didReceive response (some platforms skip it for
            // empty bodies; Linux for every download task) is delivered now.
            state.observer.send(.head(HTTPResponseHead(http)))
            state.observer.finish()
        } else {
            let error = URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "The response to \(state.request.url?.absoluteString ?? "the request") is not an HTTP response",
            ])
            state.observer.fail(error)
        }
    }

    /// `error` as a `URLError`: an `NSError` in `NSURLErrorDomain` becomes one, and the
    /// `.unknown` errors Linux Foundation reports for some libcurl failures get the code Darwin
    /// gives the same failure (the original error is kept under `NSUnderlyingErrorKey`):
    /// - "transfer closed with … remaining" (the connection closed mid-body) →
    ///   `.networkConnectionLost`;
    /// - "Empty reply from server" (`.badServerResponse`: the connection closed before any
    ///   response) → `.networkConnectionLost`;
    /// - "Received HTTP/0.9 when not allowed" (the reply is not HTTP) → `.cannotParseResponse`,
    ///   which Linux reports as `.unsupportedURL`.
    static func urlError(_ error: any Error) -> any Error {
        let urlError: URLError
        if let error = error as? URLError {
            urlError = error
        } else {
            let nsError = error as NSError
            // `Code(rawValue:)` is failable on Linux only; `as Code?` reads the same on both.
            guard nsError.domain == NSURLErrorDomain,
                  let code = URLError.Code(rawValue: nsError.code) as URLError.Code?
            else { return error }
            urlError = URLError(code, userInfo: nsError.userInfo)
        }
        let message = (urlError.userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
        let corrected: URLError.Code? = switch urlError.code {
        case .unknown where message.hasPrefix("transfer closed"): .networkConnectionLost
        case .badServerResponse where message == "Empty reply from server": .networkConnectionLost
        case .unsupportedURL where message.hasPrefix("Received HTTP/0.9"): .cannotParseResponse
        default: nil
        }
        guard let corrected else { return urlError }
        var userInfo = urlError.userInfo
        userInfo[NSUnderlyingErrorKey] = urlError as NSError
        return URLError(corrected, userInfo: userInfo)
    }
}


/// What both delegates do: refuse redirects (the client follows them) and end tasks.
///
/// Thread safety: its only state is the `TaskTable`, which is `Sendable`; subclasses add none.
private class TaskDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let table = TaskTable()

    #if canImport(FoundationNetworking)
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // Redirects are the client's to follow: deliver the 3xx.
        completionHandler(nil)
    }
    #else
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
    #endif

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        table.complete(task, error: error)
    }
}

/// The delegate of the data and upload session.
private final class SessionDelegate: TaskDelegate, URLSessionDataDelegate, @unchecked Sendable {
    #if canImport(FoundationNetworking)
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(table.receiveHead(response, of: dataTask))
    }
    #else
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(table.receiveHead(response, of: dataTask))
    }
    #endif

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        table.receive(data, of: dataTask)
    }
}

/// The delegate of the download session. Not a data delegate (see
/// ``URLSessionTransport``'s `downloads`).
private final class DownloadDelegate: TaskDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        table.written(totalBytesWritten, of: totalBytesExpectedToWrite, by: downloadTask)
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        table.finish(downloadTask, at: location)
    }
}
