import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPClient {
    /// A signal that sends `request` with `form` as its `multipart/form-data` body and delivers
    /// the buffered response, as ``send(_:bodyFile:options:)`` does.
    ///
    /// The request's `Content-Type` is set to the form's ``MultipartFormData/contentType`` (it
    /// carries the boundary, so it replaces any other). Then, on every subscription:
    /// - a form whose parts are all in memory and at most
    ///   ``MultipartFormData/maxInMemoryBodyBytes`` long is encoded into `httpBody` at once;
    /// - any other form (a file part, or a large body) is first written to a new temporary file in
    ///   ``MultipartFormData/temporaryDirectory``, on the client's ``Configuration/scheduler`` (never on the
    ///   subscribing thread), streaming each file in 64 KiB blocks; the request is sent with that
    ///   file as its body and `Content-Length` set to its size. The file is removed when the
    ///   signal ends: before its terminal event is delivered (success or failure), or when the
    ///   subscription is cancelled (writing stops at the next block). The deadline in `options`
    ///   counts from when the body is written.
    ///
    /// A file that cannot be read fails the signal with
    /// ``MultipartFormDataError/unreadableFile(_:partName:reason:)`` before anything is sent.
    public func send(
        _ request: URLRequest,
        multipart form: MultipartFormData,
        options: RequestOptions = RequestOptions()
    ) -> Signal<HTTPResponse, any Error> {
        let client = self
        guard form.needsFile else {
            return Signal(tryDeferred: {
                var sent = request
                sent.httpBody = try form.encodedData()
                sent.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
                return client.send(sent, options: options)
            })
        }
        return Signal { observer in
            // Refuse a request the client would refuse before writing a large file for it.
            if let error = Self.validate(request) {
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
                sent.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
                sent.setValue(String(length), forHTTPHeaderField: "Content-Length")
                client.send(sent, bodyFile: body.url, options: options).observe(Observer { event in
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
