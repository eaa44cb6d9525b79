import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A record whose header and payload checksums verified, with its file still open: the payload
/// can be read in pieces (a large cached HTTP body is served chunk by chunk). Record files are
/// never modified after they are renamed into place (only their use and pin slots), so the bytes
/// read later are the bytes that were verified, even if the record is replaced or removed
/// meanwhile (the open file keeps them).
final class OpenRecord: Sendable {
    let key: String
    let header: RecordHeader
    private let file: SystemFile
    /// The payload, if it was read into memory (a small record).
    let payload: Data?
    private let folderPath: String
    /// The cache's generation when the record was opened: new metadata for it commits only if
    /// no ``DiskCache/removeAll()`` ran since.
    let generation: CacheGeneration

    init(key: String, header: RecordHeader, file: SystemFile, payload: Data?, folderPath: String, generation: CacheGeneration) {
        self.key = key
        self.header = header
        self.file = file
        self.payload = payload
        self.folderPath = folderPath
        self.generation = generation
    }

    var payloadLength: Int { Int(header.payloadLength) }
    var metadata: Data { Data(header.metadata) }

    /// `count` payload bytes from `offset` (fewer at the end).
    func readPayload(at offset: Int, count: Int) throws -> Data {
        let end = min(payloadLength, offset + count)
        guard offset < end else { return Data() }
        if let payload {
            return payload.subdata(in: (payload.startIndex + offset)..<(payload.startIndex + end))
        }
        var chunk = Data(count: end - offset)
        let read = try chunk.withUnsafeMutableBytes { buffer in
            try file.read(into: buffer, at: header.headerLength + offset)
        }
        guard read == end - offset else {
            throw CacheError.fileSystem(operation: "read", path: folderPath, errno: EIO)
        }
        return chunk
    }

    /// Writes the payload into `destination` at `offset`: from memory if it is there, else copied
    /// file to file — by the kernel on Linux (`sendfile`), through a 1 MiB buffer elsewhere.
    func copyPayload(to destination: SystemFile, at offset: Int) throws {
        if let payload {
            try payload.withUnsafeBytes { try destination.write($0, at: offset) }
            return
        }
        #if os(Linux)
        guard lseek(destination.descriptor, off_t(offset), SEEK_SET) == off_t(offset) else { throw SystemError.current }
        var source = off_t(header.headerLength)
        var remaining = payloadLength
        while remaining > 0 {
            let sent = sendfile(destination.descriptor, file.descriptor, &source, remaining)
            if sent > 0 {
                remaining -= sent
            } else if sent == 0 {
                throw SystemError(code: EIO)
            } else if errno != EINTR {
                throw SystemError.current
            }
        }
        #else
        var copied = 0
        while copied < payloadLength {
            let chunk = try readPayload(at: copied, count: 1 << 20)
            guard !chunk.isEmpty else { throw SystemError(code: EIO) }
            try chunk.withUnsafeBytes { try destination.write($0, at: offset + copied) }
            copied += chunk.count
        }
        #endif
    }
}
