import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The tasks of one session: per-task state keyed by task identifier, and what both delegates
/// do with it.
///
/// Thread safety: state is behind a `Locked`; observers are called outside it.
final class URLSessionTaskTable: Sendable {
    struct TaskState: Sendable {
        let request: URLRequest
        let observer: Observer<HTTPResponsePart, any Error>
        /// Where a download task's body goes; `nil` for data and upload tasks.
        let destination: ResponseBodyFile?
        /// Where the bytes of the request body sent are reported, if anyone listens.
        let bodyProgress: RequestBodyProgress?
        var headDelivered = false
        /// The response was not HTTP: the task was cancelled and fails with `.badServerResponse`.
        var notHTTP = false
        /// The downloaded file could not be moved to the destination.
        var moveError: (any Error)?

        init(
            request: URLRequest,
            observer: Observer<HTTPResponsePart, any Error>,
            destination: ResponseBodyFile?,
            bodyProgress: RequestBodyProgress? = nil
        ) {
            self.request = request
            self.observer = observer
            self.destination = destination
            self.bodyProgress = bodyProgress
        }
    }

    private let tasks = Locked<[Int: TaskState]>([:])

    #if canImport(FoundationNetworking)
    /// Where tasks are cancelled (see ``cancelTask(_:)``): one serial queue per session, because
    /// Linux Foundation serialises every cancel of a session on its work queue anyway.
    private let cancellations = DispatchQueue(label: "Transit.URLSessionTransport.cancellations")
    #endif

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

    /// Cancels `task` without waiting for `URLSession`.
    ///
    /// Linux Foundation's `cancel()` runs synchronously on its work queue (one queue for every
    /// `URLSession` of the process), which libcurl holds for as long as data is ready on the
    /// socket: a compressed body is inflated there, chunk after chunk, in one call. Cancelling on the caller's thread would block it
    /// until then; on the delegate queue (the size limit, a deadline, a consumer cancelling from
    /// an event) it would also stop the queue, so every chunk inflated meanwhile would wait in
    /// memory. The cancel is handed to a queue of its own instead: the delegate queue goes on
    /// dropping the chunks of the forgotten task, and the caller returns at once.
    func cancelTask(_ task: URLSessionTask) {
        #if canImport(FoundationNetworking)
        cancellations.async { task.cancel() }
        #else
        task.cancel()
        #endif
    }

    /// What to answer to `challenge` for `task`: never a credential.
    ///
    /// A 401 or 407 is the caller's to handle (``catchHTTPErrors()``, an ``Authorizer``'s
    /// renewal), so it is delivered as the response; credentials from the URL, the configuration's
    /// credential storage or the keychain are never offered. Challenges that are not HTTP
    /// authentication (server trust, client certificates) get Foundation's default handling.
    func answer(_ challenge: URLAuthenticationChallenge, for task: URLSessionTask) -> URLSession.AuthChallengeDisposition {
        guard Self.isHTTPAuthentication(challenge) else { return .performDefaultHandling }
        #if canImport(FoundationNetworking)
        // Linux Foundation raises the challenge once the 401 is complete: its head and every body
        // chunk are already on the delegate queue, ahead of this call. Default handling without a
        // credential leaves the task suspended for good, a nil credential traps, and rejecting or
        // cancelling fails the task with `.cancelled`. So the response delivered so far is
        // finished here, and the task, forgotten, is then cancelled.
        if let state = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
            if !state.headDelivered, let http = challenge.failureResponse as? HTTPURLResponse {
                // A download task's head comes only at completion on Linux.
                state.observer.send(.head(HTTPResponseHead(http)))
            }
            state.observer.finish()
        }
        return .cancelAuthenticationChallenge
        #else
        // Darwin asks when the head arrives; rejecting the only protection space without a
        // credential lets the task go on and deliver the 401 or 407 as its response.
        return .rejectProtectionSpace
        #endif
    }

    /// What to answer to a challenge of the whole session: as ``answer(_:for:)``, with no task
    /// to finish (Linux Foundation raises none).
    static func answer(_ challenge: URLAuthenticationChallenge) -> URLSession.AuthChallengeDisposition {
        isHTTPAuthentication(challenge) ? .rejectProtectionSpace : .performDefaultHandling
    }

    /// Whether `challenge` asks for HTTP credentials (any scheme, known or not) rather than
    /// about the TLS connection.
    private static func isHTTPAuthentication(_ challenge: URLAuthenticationChallenge) -> Bool {
        #if canImport(FoundationNetworking)
        // libcurl does TLS itself: Linux Foundation raises challenges for 401s only.
        return true
        #else
        let method = challenge.protectionSpace.authenticationMethod
        return method != NSURLAuthenticationMethodServerTrust && method != NSURLAuthenticationMethodClientCertificate
        #endif
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

    /// `task` sent `total` bytes of its request body, of `expected` (negative when unknown).
    func sent(_ total: Int64, of expected: Int64, by task: URLSessionTask) {
        guard let progress = tasks.withLock({ $0[task.taskIdentifier]?.bodyProgress }) else { return }
        progress.progress(total, expected >= 0 ? expected : nil)
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
                cancelTask(task)
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
        // `task.response` takes a trip through the work queue of `URLSession`: it is read only when a
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
    ///   which Linux reports as `.unsupportedURL`;
    /// - "Failed writing received data to disk/application" (libcurl's decoder refusing the body:
    ///   bytes after the end of a gzip member, empty members included) →
    ///   `.cannotDecodeContentData`, what the AsyncHTTPClient adapter gives a body it cannot
    ///   decode.
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
        case .unknown where message.hasPrefix("Failed writing received data"): .cannotDecodeContentData
        default: nil
        }
        guard let corrected else { return TLSFailure.classified(urlError) }
        var userInfo = urlError.userInfo
        userInfo[NSUnderlyingErrorKey] = urlError as NSError
        return URLError(corrected, userInfo: userInfo)
    }
}
