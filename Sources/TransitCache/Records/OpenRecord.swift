import Foundation

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

    init(key: String, header: RecordHeader, file: SystemFile, payload: Data?, folderPath: String) {
        self.key = key
        self.header = header
        self.file = file
        self.payload = payload
        self.folderPath = folderPath
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
}
