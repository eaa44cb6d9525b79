import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing a ``MultipartFormData`` body: to memory, to a sink in fixed-size blocks, or to a file.
///
/// The layout (RFC 2046 and RFC 7578): for each part `--boundary` CR LF, the part's headers
/// (`Content-Disposition`, then `Content-Type` if it has one), a blank line, the content and
/// CR LF; then `--boundary--` CR LF. There is no preamble or epilogue.
extension MultipartFormData {
    /// The whole body in memory, for a form whose parts are all in memory.
    ///
    /// - Throws: ``MultipartFormDataError/containsFiles`` if a part is a file (files are never read
    ///   into memory whole), or another ``MultipartFormDataError`` if a part cannot be encoded.
    public func encodedData() throws -> Data {
        guard !containsFiles else { throw MultipartFormDataError.containsFiles }
        var body = Data(capacity: inMemoryLength ?? 0)
        try write(blockSize: Self.defaultBlockSize) { body.append($0) }
        return body
    }

    /// Streams the body to `sink` in blocks of exactly `blockSize` bytes (the last one may be
    /// shorter). Files are read `blockSize` bytes at a time at most, so memory use is bounded by
    /// about twice the block size whatever the size of the files.
    ///
    /// Every part is checked first (content types, a chosen boundary, every file opened and found
    /// to be a regular file), so an unreadable file fails before `sink` sees a byte.
    ///
    /// - Parameters:
    ///   - blockSize: the block size in bytes (64 KiB by default; values below 1 count as 1).
    ///   - sink: receives each block, in order; an error it throws stops the writing and is
    ///     rethrown.
    /// - Throws: a ``MultipartFormDataError`` (``MultipartFormDataError/unreadableFile(_:partName:reason:)``
    ///   names the file), or what `sink` threw.
    func write(blockSize: Int = 65_536, to sink: (Data) throws -> Void) throws {
        try validate()
        var out = BlockBuffer(size: max(1, blockSize))
        let crlf = Data("\r\n".utf8)
        let delimiter = Data("--\(boundary)".utf8)
        for part in parts {
            try out.write(delimiter, to: sink)
            try out.write(crlf, to: sink)
            try out.write(part.head, to: sink)
            switch part.content {
            case .data(let data):
                try out.write(data, to: sink)
            case .file(let url):
                try copy(url, partName: part.name, into: &out, sink: sink)
            }
            try out.write(crlf, to: sink)
        }
        try out.write(delimiter + Data("--\r\n".utf8), to: sink)
        try out.flush(to: sink)
    }

    /// Writes the body to `file` (created, or truncated if it exists), reading files in blocks of
    /// `blockSize` bytes, and returns its length in bytes. On failure the file is removed.
    ///
    /// - Throws: a ``MultipartFormDataError``: ``MultipartFormDataError/unreadableFile(_:partName:reason:)``
    ///   for a part's file, ``MultipartFormDataError/cannotWriteBody(_:reason:)`` for `file`.
    @discardableResult
    public func writeBody(to file: URL, blockSize: Int = 65_536) throws -> Int64 {
        try writeBody(to: file, blockSize: blockSize, shouldContinue: { true })
    }

    /// ``writeBody(to:blockSize:)`` that checks `shouldContinue` before every block and throws
    /// `CancellationError` (removing the file) once it returns `false`.
    func writeBody(to file: URL, blockSize: Int, shouldContinue: () -> Bool) throws -> Int64 {
        try validate()
        let fd = file.withUnsafeFileSystemRepresentation { path in
            path.map { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) } ?? -1
        }
        guard fd >= 0 else { throw MultipartFormDataError.cannotWriteBody(file, reason: Self.systemError(errno)) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var length: Int64 = 0
        do {
            try write(blockSize: blockSize) { block in
                guard shouldContinue() else { throw CancellationError() }
                do {
                    try handle.write(contentsOf: block)
                } catch {
                    throw MultipartFormDataError.cannotWriteBody(file, reason: error.localizedDescription)
                }
                length += Int64(block.count)
            }
            try handle.close()
        } catch {
            try? handle.close()
            _ = file.withUnsafeFileSystemRepresentation { path in path.map { unlink($0) } }
            if error is MultipartFormDataError || error is CancellationError { throw error }
            throw MultipartFormDataError.cannotWriteBody(file, reason: error.localizedDescription)
        }
        return length
    }

    /// Checks what can be checked before a byte is written: content types, a chosen boundary,
    /// and that every file can be opened and is a regular file.
    func validate() throws {
        for part in parts {
            if let type = part.contentType, type.isEmpty || !HTTPSyntax.isFieldValue(type) {
                throw MultipartFormDataError.invalidContentType(partName: part.name)
            }
        }
        if isBoundaryChosen, let part = parts.first(where: { $0.mentions(Array(boundary.utf8)) }) {
            throw MultipartFormDataError.boundaryInPart(partName: part.name)
        }
        for part in parts {
            if case .file(let url) = part.content {
                try Self.openForReading(url, partName: part.name).close()
            }
        }
    }

    /// Copies the file at `url` into `out`, reading at most the room left in the current block.
    private func copy(_ url: URL, partName: String, into out: inout BlockBuffer, sink: (Data) throws -> Void) throws {
        let handle = try Self.openForReading(url, partName: partName)
        defer { try? handle.close() }
        while true {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: out.room)
            } catch {
                throw MultipartFormDataError.unreadableFile(url, partName: partName, reason: error.localizedDescription)
            }
            guard let chunk, !chunk.isEmpty else { return }
            try out.write(chunk, to: sink)
        }
    }

    /// Opens `url` for reading, or throws ``MultipartFormDataError/unreadableFile(_:partName:reason:)``
    /// saying why: no such file, no permission, a directory, a FIFO or device (which could block
    /// or never end). The open does not block on a FIFO.
    static func openForReading(_ url: URL, partName: String) throws -> FileHandle {
        func unreadable(_ reason: String) -> MultipartFormDataError {
            .unreadableFile(url, partName: partName, reason: reason)
        }
        guard url.isFileURL else { throw unreadable("it is not a file URL") }
        let fd = url.withUnsafeFileSystemRepresentation { path in
            path.map { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } ?? -1
        }
        guard fd >= 0 else { throw unreadable(systemError(errno)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw unreadable(systemError(code))
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            close(fd)
            throw unreadable(type == S_IFDIR ? "it is a directory" : "it is not a regular file")
        }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    private static func systemError(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// Collects bytes into blocks of exactly `size` bytes and hands each full block to a sink.
struct BlockBuffer {
    let size: Int
    private var buffer: Data
    /// The most capacity reserved up front, so a huge block size does not allocate at once.
    private static let maxReserved = 1 << 20

    init(size: Int) {
        self.size = size
        buffer = Data(capacity: min(size, Self.maxReserved))
    }

    /// How many bytes the current block can still take (at least 1).
    var room: Int { size - buffer.count }

    mutating func write(_ data: Data, to sink: (Data) throws -> Void) throws {
        var rest = data[...]
        while !rest.isEmpty {
            let taken = rest.prefix(room)
            buffer.append(taken)
            rest = rest.dropFirst(taken.count)
            if buffer.count == size {
                try sink(buffer)
                buffer = Data(capacity: min(size, Self.maxReserved))
            }
        }
    }

    /// Hands the last, partial block to `sink`, if there is one.
    mutating func flush(to sink: (Data) throws -> Void) throws {
        guard !buffer.isEmpty else { return }
        try sink(buffer)
        buffer = Data()
    }
}
