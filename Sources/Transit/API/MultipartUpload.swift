import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPClient {
    /// A signal that sends `request` with `form` as its `multipart/form-data` body, its
    /// `Content-Type` replaced by the form's, as a ``RESTAPI`` verb with
    /// `RequestBody.multipart(_:)` does.
    func send(
        _ request: URLRequest,
        multipart form: MultipartFormData,
        options: RequestOptions = RequestOptions()
    ) -> Signal<HTTPResponse, any Error> {
        let body = RequestBody.multipart(form)
        let client = self
        return Signal(tryDeferred: {
            body.sending(try body.prepared(request), by: client) { client, request, file in
                client.send(request, bodyFile: file, options: options)
            }
        })
    }
}

extension MultipartFormData {
    /// The signal that writes this form to a new temporary file in ``temporaryDirectory`` on the
    /// client's scheduler, then hands `request` (its `Content-Length` set to the file's size) and
    /// the file to `send`. The file is removed when the signal ends: before its terminal event is
    /// delivered, or when the subscription is cancelled (writing stops at the next block).
    ///
    /// A request the client would refuse fails before anything is written.
    func sendingThroughTemporaryFile<Output>(
        _ request: URLRequest,
        by client: HTTPClient,
        through send: @escaping @Sendable (HTTPClient, consuming URLRequest, URL?) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        let form = self
        return Signal { observer in
            // Refuse a request the client would refuse before writing a large file for it.
            if let error = HTTPClient.validate(request) {
                observer.fail(error)
                return nil
            }
            let scope = CancellationToken()
            let body = TemporaryBodyFile(in: form.temporaryDirectory)
            client.scheduler.schedule {
                guard !scope.isCancelled else { return }
                let length: Int64
                do {
                    length = try body.write { file, shouldContinue in
                        try form.writeBody(to: file, blockSize: MultipartFormData.defaultBlockSize, shouldContinue: shouldContinue)
                    }
                } catch {
                    body.remove()
                    observer.fail(error)
                    return
                }
                var sent = request
                sent.httpBody = nil
                sent.setValue(String(length), forHTTPHeaderField: "Content-Length")
                send(client, sent, body.url).observe(Observer { event in
                    // Removed before the terminal event is delivered, so whoever sees the end
                    // sees the file gone.
                    if event.isTerminal { body.remove() }
                    observer.send(event)
                }, in: scope)
            }
            return {
                scope.cancel()
                body.remove()
            }
        }
    }
}

/// The temporary file a request body is written to, removed exactly when the request ends.
///
/// ``remove()`` may run on any thread at any time, also while ``write(_:)`` is writing: the
/// writer stops at its next block, and whichever of the two comes last removes the file, so it
/// never outlives the request.
final class TemporaryBodyFile: Sendable {
    let url: URL
    private let removed = Locked(false)

    init(in directory: URL) {
        url = directory.appendingPathComponent("transit-body-\(UUID().uuidString).multipart")
    }

    var isRemoved: Bool { removed.withLock { $0 } }

    /// Runs `writer` with the file's URL and a function that says whether to go on, and returns
    /// what it returns. Throws `CancellationError` (and removes the file) if the file was removed
    /// meanwhile.
    func write(_ writer: (URL, () -> Bool) throws -> Int64) throws -> Int64 {
        guard !isRemoved else { throw CancellationError() }
        let length = try writer(url) { !self.isRemoved }
        if isRemoved {
            // `remove()` ran while the file was being written, perhaps before it was created.
            try? FileManager.default.removeItem(at: url)
            throw CancellationError()
        }
        return length
    }

    /// Removes the file (if it exists) and stops any write in progress. Safe to call again.
    func remove() {
        removed.withLock { $0 = true }
        try? FileManager.default.removeItem(at: url)
    }
}

extension RequestBody {
    /// The signal that sends `request` (already ``prepared(_:)`` and modified) with this body:
    /// `send` receives the client, the request and the file to stream the body from, if any.
    func sending<Output>(
        _ request: consuming URLRequest,
        by client: HTTPClient,
        through send: @escaping @Sendable (HTTPClient, consuming URLRequest, URL?) -> Signal<Output, any Error>
    ) -> Signal<Output, any Error> {
        switch content {
        case .file(let url, _):
            return send(client, request, url)
        case .multipart(let form) where form.needsFile:
            return form.sendingThroughTemporaryFile(request, by: client, through: send)
        default:
            return send(client, request, nil)
        }
    }
}
