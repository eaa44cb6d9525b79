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
    /// Body bytes received and written so far: decoded bytes, as they go into the file.
    public let bytesReceived: Int64
    /// How many bytes ``bytesReceived`` counts up to, when known: the `Content-Length` of a body
    /// that is not content-encoded. `nil` when the server sent no length, and when the body is
    /// content-encoded (`gzip`, `deflate`, …): transports deliver it decoded, and the declared
    /// length is that of the encoded bytes. Never less than ``bytesReceived``: a transport
    /// that reports a total before the head is known has it dropped once more bytes than that
    /// arrive.
    public let expectedBytes: Int64?

    /// Creates a progress report.
    public init(bytesReceived: Int64, expectedBytes: Int64?) {
        self.bytesReceived = bytesReceived
        self.expectedBytes = expectedBytes
    }

    /// `bytesReceived / expectedBytes`, between 0 and 1, when the size is known.
    public var fractionCompleted: Double? {
        guard let expectedBytes, expectedBytes > 0 else { return nil }
        return min(1, Double(bytesReceived) / Double(expectedBytes))
    }
}

/// A completed download.
public struct DownloadedFile: Sendable {
    /// Where the body is: the destination given to the download.
    public let url: URL
    /// The response's status line and header fields.
    public let head: HTTPResponseHead
    /// The body's size in bytes.
    public let byteCount: Int64

    /// The status line and headers as Foundation's `HTTPURLResponse`, made when first read.
    public var response: HTTPURLResponse { head.urlResponse }
}

/// Writes one download: to a hidden temporary file beside the destination, renamed over the
/// destination only once the body is complete, and removed on failure or cancellation.
///
/// The body reaches the file one of two ways: as ``HTTPResponsePart/body(_:)`` chunks that the
/// writer writes, or written by the transport itself (``HTTPTransport/writesResponseBodiesToFiles``)
/// to ``temporary``, which then only reports how far it is (``written(_:)``). The writer accepts
/// both, so a transport that delivers parts for some requests still works.
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
    }

    static let keptErrorBodyBytes = 64 * 1024

    /// The size of one write to the file when the writer writes the chunks. Transports deliver
    /// chunks of about 16 KiB; a system call per chunk made the writer, not the network, the
    /// slow side of a loopback download. One write per 1 MiB costs 1 MiB of memory.
    static let writeSize = 1 << 20

    let destination: URL
    let temporary: URL
    private let maxBytes: Int?
    private let state = Locked(State())

    init(destination: URL, maxBytes: Int?) {
        self.destination = destination
        let folder = destination.deletingLastPathComponent()
        temporary = folder.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).transit-partial")
        self.maxBytes = maxBytes
    }

    /// The head arrived: a 2xx starts the download, another status an error body.
    func begin(_ head: HTTPResponseHead) throws -> DownloadProgress? {
        // The body's length as written: unknown for a content-encoded body (decoded as it comes).
        let declared = head.declaredBodyLength
        if let maxBytes, let declared, declared > maxBytes {
            throw ResponseTooLargeError(limit: maxBytes, declaredLength: declared)
        }
        let encoded = head.isContentEncoded
        let success = (200..<300).contains(head.statusCode)
        return state.withLock { state in
            state.head = head
            state.expectedUnknown = state.expectedUnknown || encoded
            state.expected = state.expectedUnknown ? nil : declared
            state.success = success
            // Progress the transport reported before the head (see ``written(_:expected:)``) is
            // not reported again.
            return success && state.received == 0 ? DownloadProgress(bytesReceived: 0, expectedBytes: declared) : nil
        }
    }

    /// A chunk arrived: write it (or keep the start of an error body).
    func write(_ chunk: Data) throws -> DownloadProgress? {
        try state.withLock { state in
            guard state.success else {
                let room = Self.keptErrorBodyBytes - state.errorBody.count
                if room > 0 { state.errorBody.append(chunk.prefix(room)) }
                return nil
            }
            state.received += Int64(chunk.count)
            if let maxBytes, state.received > maxBytes { throw ResponseTooLargeError(limit: maxBytes) }
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

    /// The transport wrote `total` body bytes to ``temporary`` so far, of `expected` when the
    /// length is declared. Before the head arrives (a transport may report progress first) the
    /// bytes count as the download's; after a head that is not 2xx, and for totals already
    /// reported, nothing is reported.
    func written(_ total: Int64, expected: Int64?) throws -> DownloadProgress? {
        try state.withLock { state in
            guard state.head == nil || state.success, state.handle == nil, total > state.received else { return nil }
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

    private func openTemporaryFile() throws -> FileHandle {
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [
                NSFilePathErrorKey: temporary.path,
                NSLocalizedDescriptionKey: "Cannot create the download's temporary file in \(temporary.deletingLastPathComponent().path).",
            ])
        }
        return try FileHandle(forWritingTo: temporary)
    }

    /// The body ended: move the file into place, or produce the error response's failure.
    func finish(request: URLRequest) throws -> DownloadedFile {
        let (head, success, handle, errorBody, pending) = state.withLock { state in
            defer {
                state.handle = nil
                state.pending = Data()
            }
            return (state.head, state.success, state.handle, state.errorBody, state.pending)
        }
        guard let head else { throw URLError(.badServerResponse) }
        guard success else {
            // The error body: kept from its chunks, or the start of what the transport wrote.
            var body = errorBody
            if body.isEmpty, let file = try? FileHandle(forReadingFrom: temporary) {
                body = (try? file.read(upToCount: Self.keptErrorBodyBytes)) ?? Data()
                try? file.close()
            }
            try? FileManager.default.removeItem(at: temporary)
            let response = HTTPResponse(data: body, head: head, request: request)
            if let error = makeHTTPError(for: response) { throw error }
            throw URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "The download was answered \(head.statusCode), not with a body to save.",
            ])
        }
        if let handle {
            if !pending.isEmpty { try handle.write(contentsOf: pending) }
            try handle.close()
        } else if !FileManager.default.fileExists(atPath: temporary.path) {
            // An empty body, or a transport that wrote nothing.
            _ = try openTemporaryFile().close()
        }
        let byteCount = try Self.size(of: temporary)
        if let maxBytes, byteCount > maxBytes {
            try? FileManager.default.removeItem(at: temporary)
            throw ResponseTooLargeError(limit: maxBytes)
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

    /// The download failed or was cancelled: close and remove the temporary file.
    func discard() {
        let handle = state.withLock { state in
            defer {
                state.handle = nil
                state.pending = Data()
            }
            return state.handle
        }
        try? handle?.close()
        try? FileManager.default.removeItem(at: temporary)
    }

    /// The download of `request` to `destination`: progress values, then the completed file.
    /// `parts` makes the exchange, given where the transport should write the body when
    /// `transportWrites` (`nil` otherwise). See ``HTTPClient/download(_:to:options:)``.
    static func signal(
        to destination: URL,
        request: URLRequest,
        maxBytes: Int?,
        transportWrites: Bool,
        parts: @escaping @Sendable (ResponseBodyFile?) -> Signal<HTTPResponsePart, any Error>
    ) -> Signal<DownloadEvent, any Error> {
        Signal<DownloadEvent, any Error> { observer in
            let scope = CancellationToken()
            let writer = DownloadWriter(destination: destination, maxBytes: maxBytes)
            let fail: @Sendable (any Error) -> Void = { error in
                scope.cancel()
                writer.discard()
                observer.fail(error)
            }
            let file = transportWrites ? ResponseBodyFile(url: writer.temporary) { total, expected in
                do {
                    if let progress = try writer.written(total, expected: expected) { observer.send(.progress(progress)) }
                } catch {
                    fail(error)
                }
            } : nil
            parts(file).observe(Observer { event in
                do {
                    switch event {
                    case .value(.head(let head)):
                        if let progress = try writer.begin(head) { observer.send(.progress(progress)) }
                    case .value(.body(let chunk)):
                        if let progress = try writer.write(chunk) { observer.send(.progress(progress)) }
                    case .finished:
                        observer.send(.completed(try writer.finish(request: request)))
                        observer.finish()
                    case .failed(let error):
                        fail(error)
                    }
                } catch {
                    fail(error)
                }
            }, in: scope)
            return {
                scope.cancel()
                writer.discard()
            }
        }
    }
}
