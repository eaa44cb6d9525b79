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
    /// A transport with the default session configuration.
    public static let shared = URLSessionTransport()

    private let session: URLSession
    private let delegate: SessionDelegate

    /// Creates a transport with its own session built from `configuration`.
    ///
    /// The configuration is copied by `URLSession`: later changes to it have no effect. Leave
    /// `waitsForConnectivity` off (it is not implemented on Linux). To count the bytes and time
    /// the exchanges, give the ``HTTPClient`` that uses it an ``HTTPEventMonitor``.
    public init(configuration: URLSessionConfiguration = .default) {
        delegate = SessionDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        // URLSession keeps its delegate until invalidated; this breaks session -> delegate.
        session.invalidateAndCancel()
    }

    /// The number of requests in flight (subscribed, not yet finished, failed or cancelled).
    public var activeTaskCount: Int {
        delegate.activeTaskCount
    }

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
            let task: URLSessionTask = if let file = request.bodyFile {
                session.uploadTask(with: urlRequest, fromFile: file)
            } else {
                session.dataTask(with: urlRequest)
            }
            delegate.register(task.taskIdentifier, SessionDelegate.TaskState(request: urlRequest, observer: observer))
            task.resume()
            // Capturing `self` keeps the transport (so its session) alive while the request runs;
            // the teardown is released as soon as the subscription ends.
            return { [self] in
                // A task that already ended was forgotten by the delegate: cancelling it would
                // only cost a trip through the session's work queue.
                if delegate.cancel(task) { task.cancel() }
            }
        }
    }
}

/// The session delegate: per-task state keyed by task identifier.
///
/// Thread safety: state is behind a `Locked`; observers are called outside it.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    struct TaskState: Sendable {
        let request: URLRequest
        let observer: Observer<HTTPResponsePart, any Error>
        var headDelivered = false
        /// The response was not HTTP: the task was cancelled and fails with `.badServerResponse`.
        var notHTTP = false

        init(request: URLRequest, observer: Observer<HTTPResponsePart, any Error>) {
            self.request = request
            self.observer = observer
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

    #if canImport(FoundationNetworking)
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(receiveHead(response, of: dataTask))
    }

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
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(receiveHead(response, of: dataTask))
    }

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

    /// Delivers the head of `task`, or fails it if the response is not HTTP.
    private func receiveHead(_ response: URLResponse, of task: URLSessionTask) -> URLSession.ResponseDisposition {
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

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !data.isEmpty else { return }
        let observer = tasks.withLock { $0[dataTask.taskIdentifier]?.observer }
        observer?.send(.body(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        // `task.response` takes a trip through the session's work queue: it is read only when a
        // late head needs it.
        if let error, !state.notHTTP {
            state.observer.fail(Self.urlError(error))
        } else if !state.notHTTP, state.headDelivered {
            state.observer.finish()
        } else if !state.notHTTP, let http = task.response as? HTTPURLResponse {
            // A head that never went through didReceive response (some platforms skip it for
            // empty bodies) is delivered now.
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

