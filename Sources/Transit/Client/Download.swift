import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// What a download reports: progress as bytes arrive, then the finished file.
public enum DownloadEvent: Sendable {
    /// Bytes were written to the (still hidden) file.
    case progress(DownloadProgress)
    /// The whole body is on disk, under the destination's name. Always the last value.
    case completed(DownloadedFile)
}

/// How far a download is.
public struct DownloadProgress: Sendable, Hashable {
    /// Body bytes received and written so far: decoded bytes, as they go into the file. A
    /// download that continues a partial file (see ``DownloadResumeData``) starts at the bytes
    /// already on disk; one that has to start again from zero (the server sent the whole
    /// representation) reports from zero again.
    public let bytesReceived: Int64
    /// How many bytes ``bytesReceived`` counts up to, when known: the `Content-Length` of a body
    /// that is not content-encoded. `nil` when the server sent no length, and when the body is
    /// content-encoded (`gzip`, `deflate`, …): transports deliver it decoded, and the declared
    /// length is that of the encoded bytes. For a continued download, the length of the whole
    /// representation. Never less than ``bytesReceived``: a transport
    /// that reports a total before the head is known has it dropped once more bytes than that
    /// arrive.
    public let expectedBytes: Int64?
}

/// A completed download.
public struct DownloadedFile: Sendable {
    /// Where the body is: the destination given to the download.
    public let url: URL
    /// The response's status line and header fields: `206 Partial Content` for a download that
    /// continued a partial file.
    public let head: HTTPResponseHead
    /// The body's size in bytes.
    public let byteCount: Int64
}

/// Writes one download: to a hidden temporary file beside the destination, renamed over the
/// destination only once the body is complete.
///
/// The body reaches the file one of two ways: as ``HTTPResponsePart/body(_:)`` chunks that the
/// writer writes, or written by the transport itself (``HTTPTransport/writesResponseBodiesToFiles``)
/// to ``temporary``, which then only reports how far it is (``written(_:expected:)``). The writer
/// accepts both, so a transport that delivers parts for some requests still works.
///
/// Resuming (see ``DownloadResumeData``): a writer made for a GET claims the partial file an
/// interrupted download of the same URL kept for the destination; the request then carries
/// ``rangeHeaders``, and ``begin(_:)`` checks the answer before a byte is appended. When the
/// transfer fails after a resumable head, ``interrupt()`` keeps the bytes written (chunks the
/// writer wrote, never a transport's file, whose bytes are not known to be a prefix); on any
/// other failure, and on cancellation, the file is removed.
///
/// Thread safety: every method runs under `state`'s lock.
final class DownloadWriter: Sendable {
    private struct State {
        var handle: FileHandle?
        var received: Int64 = 0
        var expected: Int64?
        /// The expected total is known to be unknown: the body is content-encoded, or more bytes
        /// arrived than a transport's total said.
        var expectedUnknown = false
        var head: HTTPResponseHead?
        /// The head's status is 2xx: the body is the download. Otherwise it is an error body.
        var success = false
        /// The first bytes of an error response's body, kept for its ``HTTPError``.
        var errorBody = Data()
        /// Body bytes received but not yet written: chunks are gathered into writes of
        /// ``writeSize`` bytes.
        var pending = Data()
        /// The partial download this exchange continues (its request asks for the rest).
        var continuing: DownloadResumeData?
        /// Its partial file, opened when it was claimed (a link is never followed): what the rest
        /// is appended to. Closed once the answer is known or the download ends.
        var continuingFile: FileHandle?
        /// The validator and total length under which the bytes written can be continued later.
        var resumable: (validator: String, total: Int64)?
        /// The download finished, failed or was cancelled: nothing more is written or removed.
        var ended = false
    }

    /// What to do with the head of a response.
    enum Start {
        /// Go on; report this progress, if any.
        case proceed(DownloadProgress?)
        /// The answer to a resume cannot be appended: start again without a range.
        case restart
    }

    static let keptErrorBodyBytes = 64 * 1024

    /// The size of one write to the file when the writer writes the chunks. Transports deliver
    /// chunks of about 16 KiB; a system call per chunk made the writer, not the network, the
    /// slow side of a loopback download. One write per 1 MiB costs 1 MiB of memory.
    static let writeSize = 1 << 20

    let destination: URL
    let temporary: URL
    /// The requested URL, when the download may keep and continue a partial file.
    private let resumableURL: URL?
    private let maxBytes: Int?
    private let state = Locked(State())

    /// A writer for `request`'s body. A GET without a body or a `Range` header of its own may
    /// continue a partial download kept for `destination`, and keep its own if interrupted.
    init(destination: URL, request: TransportRequest, maxBytes: Int?) {
        self.destination = destination
        self.maxBytes = maxBytes
        let resumable = request.method.rawValue.uppercased() == "GET" && request.body == nil && request.bodyFile == nil && request.bodyStream == nil
            && request.value(forHTTPHeaderField: "Range") == nil && request.value(forHTTPHeaderField: "If-Range") == nil
        resumableURL = resumable ? request.url : nil
        if let url = resumableURL, let (kept, file) = KeptDownload.claim(for: destination, url: url) {
            temporary = kept.partialFile
            state.withLock { state in
                state.continuing = kept
                state.continuingFile = file
                state.resumable = (kept.validator, kept.totalBytes)
            }
        } else {
            let folder = destination.deletingLastPathComponent()
            temporary = folder.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString)\(KeptDownload.partialSuffix)")
        }
    }

    /// The headers that ask for the rest of the partial download this writer continues: empty
    /// when it starts from zero.
    var rangeHeaders: [String: String] {
        state.withLock { state in
            guard let continuing = state.continuing else { return [:] }
            return ["Range": "bytes=\(continuing.bytesOnDisk)-", "If-Range": continuing.validator]
        }
    }

    /// The head arrived: a 2xx starts the download, another status an error body. The answer to
    /// a resume is checked first: a 206 that continues the partial file exactly appends to it;
    /// another 2xx (the whole representation) replaces it; a 412, a 416 or a 206 that does not
    /// fit asks for a restart from zero.
    func begin(_ head: HTTPResponseHead) throws -> Start {
        let encoded = head.isContentEncoded
        let success = (200..<300).contains(head.statusCode)
        let (continuing, continuingFile) = state.withLock { state in
            defer { state.continuingFile = nil }
            return (state.continuing, state.continuingFile)
        }
        if let continuing {
            if KeptDownload.isContinuation(head, of: continuing), let handle = continuingFile {
                if let maxBytes, continuing.totalBytes > maxBytes {
                    try? handle.close()
                    throw ResponseTooLargeError(limit: maxBytes, declaredLength: continuing.totalBytes)
                }
                do {
                    try handle.truncate(atOffset: UInt64(continuing.bytesOnDisk))
                    try handle.seekToEnd()
                } catch {
                    try? handle.close()
                    throw error
                }
                return state.withLock { state in
                    state.head = head
                    state.success = true
                    state.handle = handle
                    state.received = continuing.bytesOnDisk
                    state.expected = continuing.totalBytes
                    return .proceed(DownloadProgress(bytesReceived: continuing.bytesOnDisk, expectedBytes: continuing.totalBytes))
                }
            }
            try? continuingFile?.close()
            if head.statusCode == 206 || head.statusCode == 412 || head.statusCode == 416 { return .restart }
            if success {
                // The whole representation (the range was ignored, or it changed): the partial
                // bytes go, the body is written from zero.
                try? FileManager.default.removeItem(at: temporary)
                state.withLock { state in
                    state.continuing = nil
                    state.resumable = nil
                }
            }
        }
        // The body's length as written: unknown for a content-encoded body (decoded as it comes).
        let declared = head.declaredBodyLength
        if let maxBytes, let declared, declared > maxBytes {
            throw ResponseTooLargeError(limit: maxBytes, declaredLength: declared)
        }
        let resumable = resumableURL == nil ? nil : KeptDownload.resumability(of: head)
        return state.withLock { state in
            state.head = head
            state.expectedUnknown = state.expectedUnknown || encoded
            state.expected = state.expectedUnknown ? nil : declared
            state.success = success
            if state.continuing == nil { state.resumable = resumable }
            // Progress the transport reported before the head (see ``written(_:expected:)``) is
            // not reported again.
            return .proceed(success && state.received == 0 ? DownloadProgress(bytesReceived: 0, expectedBytes: declared) : nil)
        }
    }

    /// The answer to a resume could not be appended: forget the partial file and start again as a
    /// download from zero.
    func restart() {
        let (handle, continuingFile) = state.withLock { state in
            defer { state = State() }
            return (state.handle, state.continuingFile)
        }
        try? handle?.close()
        try? continuingFile?.close()
        try? FileManager.default.removeItem(at: temporary)
    }

    /// A chunk arrived: write it (or keep the start of an error body).
    func write(_ chunk: Data) throws -> DownloadProgress? {
        try state.withLock { state in
            guard !state.ended else { return nil }
            guard state.success else {
                let room = Self.keptErrorBodyBytes - state.errorBody.count
                if room > 0 { state.errorBody.append(chunk.prefix(room)) }
                return nil
            }
            state.received += Int64(chunk.count)
            if let maxBytes, state.received > maxBytes { throw ResponseTooLargeError(limit: maxBytes) }
            if let continuing = state.continuing, state.received > continuing.totalBytes {
                // The rest is longer than its `Content-Range` (which ends at the last byte): a body
                // framed by chunks or by the connection's close is not bounded by a length.
                throw Self.overlongContinuation(continuing)
            }
            if let total = state.resumable?.total, state.received > total {
                // More bytes than the representation has: never kept, never continued.
                state.resumable = nil
            }
            let handle = try state.handle ?? openTemporaryFile()
            state.handle = handle
            if state.pending.isEmpty, chunk.count >= Self.writeSize {
                try handle.write(contentsOf: chunk)
            } else {
                if state.pending.isEmpty { state.pending.reserveCapacity(Self.writeSize) }
                state.pending.append(chunk)
                if state.pending.count >= Self.writeSize {
                    try handle.write(contentsOf: state.pending)
                    state.pending.removeAll(keepingCapacity: true)
                }
            }
            return DownloadProgress(bytesReceived: state.received, expectedBytes: state.expected)
        }
    }

    /// The failure of a continued download whose server sent more than the rest it announced.
    private static func overlongContinuation(_ continuing: DownloadResumeData) -> URLError {
        let range = "bytes \(continuing.bytesOnDisk)-\(continuing.totalBytes - 1)/\(continuing.totalBytes)"
        return URLError(.badServerResponse, userInfo: [
            NSLocalizedDescriptionKey: "The continued download's server sent more than the \(continuing.totalBytes - continuing.bytesOnDisk) bytes its Content-Range announced (\(range)); the partial file was discarded. Download it again from the start.",
        ])
    }

    /// The transport wrote `total` body bytes to ``temporary`` so far, of `expected` when the
    /// length is declared. Before the head arrives (a transport may report progress first) the
    /// bytes count as the download's; after a head that is not 2xx, and for totals already
    /// reported, nothing is reported.
    func written(_ total: Int64, expected: Int64?) throws -> DownloadProgress? {
        try state.withLock { state in
            guard !state.ended, state.head == nil || state.success, state.handle == nil, total > state.received else { return nil }
            state.received = total
            if state.expected == nil, !state.expectedUnknown { state.expected = expected }
            if let known = state.expected, total > known {
                // A total given before the head (a download task on Linux) that was the encoded
                // length of a body the transport decodes.
                state.expected = nil
                state.expectedUnknown = true
            }
            if let maxBytes {
                if let declared = state.expected, declared > maxBytes {
                    throw ResponseTooLargeError(limit: maxBytes, declaredLength: declared)
                }
                if total > maxBytes { throw ResponseTooLargeError(limit: maxBytes) }
            }
            return DownloadProgress(bytesReceived: total, expectedBytes: state.expected)
        }
    }

    /// Creates ``temporary``: a new file, never an existing one, never through a link.
    private func openTemporaryFile() throws -> FileHandle {
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else {
            let code = errno
            throw CocoaError(.fileWriteNoPermission, userInfo: [
                NSFilePathErrorKey: temporary.path,
                NSLocalizedDescriptionKey: "Cannot create the download's temporary file in \(temporary.deletingLastPathComponent().path): \(String(cString: strerror(code))).",
            ])
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// The body ended: move the file into place, or produce the error response's failure.
    func finish(request: TransportRequest) throws -> DownloadedFile {
        let (head, success, handle, errorBody, pending, continuing, resumable) = state.withLock { state in
            defer {
                state.handle = nil
                state.pending = Data()
                state.ended = true
                try? state.continuingFile?.close()
                state.continuingFile = nil
            }
            return (state.head, state.success, state.handle, state.errorBody, state.pending, state.continuing, state.resumable)
        }
        guard let head else {
            removeTemporary(keeping: continuing)
            throw URLError(.badServerResponse)
        }
        guard success else {
            // The error body: kept from its chunks, or the start of what the transport wrote.
            var body = errorBody
            if continuing == nil, body.isEmpty, let file = try? FileHandle(forReadingFrom: temporary) {
                body = (try? file.read(upToCount: Self.keptErrorBodyBytes)) ?? Data()
                try? file.close()
            }
            // A resume answered with a passing failure (a 5xx, 408, 429) keeps the partial file.
            let passing = head.statusCode >= 500 || head.statusCode == 408 || head.statusCode == 429
            removeTemporary(keeping: passing ? continuing : nil)
            let response = HTTPResponse(data: body, head: head, sent: request)
            if let error = makeHTTPError(for: response) { throw error }
            throw URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "The download was answered \(head.statusCode), not with a body to save.",
            ])
        }
        do {
            if let handle {
                if !pending.isEmpty { try handle.write(contentsOf: pending) }
                try handle.close()
            } else if !FileManager.default.fileExists(atPath: temporary.path) {
                // An empty body, or a transport that wrote nothing.
                _ = try openTemporaryFile().close()
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        let byteCount: Int64
        do {
            byteCount = try Self.size(of: temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        if let maxBytes, byteCount > maxBytes {
            try? FileManager.default.removeItem(at: temporary)
            throw ResponseTooLargeError(limit: maxBytes)
        }
        if continuing != nil, let total = resumable?.total, byteCount != total {
            try? FileManager.default.removeItem(at: temporary)
            throw URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "The continued download has \(byteCount) bytes, not the \(total) its server announced; it was discarded.",
            ])
        }
        guard rename(temporary.path, destination.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: destination.path,
                NSLocalizedDescriptionKey: "Cannot move the download into place at \(destination.path): \(String(cString: strerror(code))).",
            ])
        }
        return DownloadedFile(url: destination, head: head, byteCount: byteCount)
    }

    /// Removes the temporary file, or, with `kept`, keeps it as that partial download again.
    private func removeTemporary(keeping kept: DownloadResumeData?) {
        if let kept {
            KeptDownload.park(kept, for: destination)
        } else {
            try? FileManager.default.removeItem(at: temporary)
        }
    }

    private static func size(of file: URL) throws -> Int64 {
        var status = stat()
        guard stat(file.path, &status) == 0 else {
            let code = errno
            throw CocoaError(.fileReadUnknown, userInfo: [
                NSFilePathErrorKey: file.path,
                NSLocalizedDescriptionKey: "Cannot read the size of the download at \(file.path): \(String(cString: strerror(code))).",
            ])
        }
        return Int64(status.st_size)
    }

    /// The transfer failed: keep the bytes written when the response can be continued (and
    /// return what continues it), else remove the file.
    func interrupt() -> DownloadResumeData? {
        let (handle, pending, kept) = state.withLock { state -> (FileHandle?, Data, DownloadResumeData?) in
            guard !state.ended else { return (nil, Data(), nil) }
            state.ended = true
            defer {
                state.handle = nil
                state.pending = Data()
                try? state.continuingFile?.close()
                state.continuingFile = nil
            }
            guard let url = resumableURL, let resumable = state.resumable else { return (state.handle, Data(), nil) }
            if let continuing = state.continuing, state.head == nil || !state.success {
                // Failed before the rest began: the partial file is as it was.
                return (nil, Data(), continuing)
            }
            guard state.success, state.handle != nil, state.received > 0, state.received < resumable.total else {
                return (state.handle, Data(), nil)
            }
            let data = DownloadResumeData(url: url, validator: resumable.validator, bytesOnDisk: state.received, totalBytes: resumable.total, partialFile: temporary)
            return (state.handle, state.pending, data)
        }
        guard let kept else {
            try? handle?.close()
            try? FileManager.default.removeItem(at: temporary)
            return nil
        }
        do {
            if let handle {
                if !pending.isEmpty { try handle.write(contentsOf: pending) }
                try handle.close()
            }
        } catch {
            try? handle?.close()
            try? FileManager.default.removeItem(at: temporary)
            return nil
        }
        KeptDownload.park(kept, for: destination)
        return kept
    }

    /// The download was cancelled (or its signal released after it ended): close and remove
    /// the temporary file, unless the download already ended.
    func discard() {
        let handle = state.withLock { state -> FileHandle?? in
            guard !state.ended else { return nil }
            state.ended = true
            defer {
                state.handle = nil
                state.pending = Data()
                try? state.continuingFile?.close()
                state.continuingFile = nil
            }
            return .some(state.handle)
        }
        guard let handle else { return }
        try? handle?.close()
        try? FileManager.default.removeItem(at: temporary)
    }

    /// The download of `request` to `destination`: progress values, then the completed file.
    /// `parts` makes an exchange of the request it is given (`request`, with ``rangeHeaders``
    /// when continuing a partial file), given where the transport should write the body when
    /// `transportWrites` (`nil` otherwise, and when continuing: the rest arrives as parts, to be
    /// appended). See ``HTTPClient/download(_:to:options:)``.
    static func signal(
        to destination: URL,
        request: TransportRequest,
        maxBytes: Int?,
        transportWrites: Bool,
        parts: @escaping @Sendable (TransportRequest, ResponseBodyFile?) -> Signal<HTTPResponsePart, any Error>
    ) -> Signal<DownloadEvent, any Error> {
        Signal<DownloadEvent, any Error> { observer in
            let scope = CancellationToken()
            let writer = DownloadWriter(destination: destination, request: request, maxBytes: maxBytes)
            let fail: @Sendable (any Error) -> Void = { error in
                scope.cancel()
                writer.discard()
                observer.fail(error)
            }
            let interrupted: @Sendable (any Error) -> Void = { error in
                scope.cancel()
                let kept = writer.interrupt()
                observer.fail(kept?.attached(to: error, request: request) ?? error)
            }
            Self.exchange(writer: writer, request: request, transportWrites: transportWrites, parts: parts,
                          observer: observer, scope: scope, fail: fail, interrupted: interrupted)
            return {
                scope.cancel()
                writer.discard()
            }
        }
    }

    /// One exchange of the download, in its own child of `scope`; a resume whose answer cannot
    /// be appended is followed by one exchange from zero.
    private static func exchange(
        writer: DownloadWriter,
        request: TransportRequest,
        transportWrites: Bool,
        parts: @escaping @Sendable (TransportRequest, ResponseBodyFile?) -> Signal<HTTPResponsePart, any Error>,
        observer: Observer<DownloadEvent, any Error>,
        scope: CancellationToken,
        fail: @escaping @Sendable (any Error) -> Void,
        interrupted: @escaping @Sendable (any Error) -> Void
    ) {
        let range = writer.rangeHeaders
        var ranged = request
        for (field, value) in range { ranged.setValue(value, forHTTPHeaderField: field) }
        let sent = ranged
        let file = transportWrites && range.isEmpty ? ResponseBodyFile(url: writer.temporary) { total, expected in
            do {
                if let progress = try writer.written(total, expected: expected) { observer.send(.progress(progress)) }
            } catch {
                fail(error)
            }
        } : nil
        let attempt = scope.makeChild()
        parts(sent, file).observe(Observer { event in
            guard !attempt.isCancelled else { return }
            do {
                switch event {
                case .value(.head(let head)):
                    switch try writer.begin(head) {
                    case .proceed(let progress?): observer.send(.progress(progress))
                    case .proceed(nil): break
                    case .restart:
                        attempt.cancel()
                        writer.restart()
                        exchange(writer: writer, request: request, transportWrites: transportWrites, parts: parts,
                                 observer: observer, scope: scope, fail: fail, interrupted: interrupted)
                    }
                case .value(.body(let chunk)):
                    if let progress = try writer.write(chunk) { observer.send(.progress(progress)) }
                case .finished:
                    observer.send(.completed(try writer.finish(request: sent)))
                    observer.finish()
                case .failed(let error):
                    interrupted(error)
                }
            } catch {
                fail(error)
            }
        }, in: attempt)
    }
}
