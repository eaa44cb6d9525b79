import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// What both delegates do: refuse redirects (the client follows them), deliver authentication
/// challenges as responses, and end tasks.
///
/// Thread safety: its only state is the `URLSessionTaskTable`, which is `Sendable`; subclasses
/// add none.
class TaskDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let table = URLSessionTaskTable()
    /// The transport's server-trust policy, evaluated in server-trust challenges (Apple platforms).
    let serverTrust: ServerTrustPolicy?

    init(serverTrust: ServerTrustPolicy?) {
        self.serverTrust = serverTrust
    }

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

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // A 401 or 407 is delivered as the response, never answered with a credential.
        answer(challenge, completionHandler) { table.answer(challenge, for: task) }
    }

    func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Challenges of a whole connection (NTLM, Negotiate, server trust): the same rule, with
        // no task to finish.
        answer(challenge, completionHandler) { URLSessionTaskTable.answer(challenge) }
    }

    /// Answers `challenge`: by the server-trust policy when it covers the challenged host (Apple
    /// platforms), otherwise with `otherwise`'s disposition and no credential.
    private func answer(
        _ challenge: URLAuthenticationChallenge,
        _ completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void,
        otherwise: () -> URLSession.AuthChallengeDisposition
    ) {
        #if canImport(Security) && !canImport(FoundationNetworking)
        if let (disposition, credential) = ServerTrustEvaluation.answer(challenge, policy: serverTrust) {
            completionHandler(disposition, credential)
            return
        }
        #endif
        completionHandler(otherwise(), nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        table.sent(totalBytesSent, of: totalBytesExpectedToSend, by: task)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        table.complete(task, error: error)
    }
}

/// The delegate of the data and upload session.
final class SessionDelegate: TaskDelegate, URLSessionDataDelegate, @unchecked Sendable {
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
final class DownloadDelegate: TaskDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
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
