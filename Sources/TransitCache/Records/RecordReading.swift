import Foundation

/// Reading and verifying record files: the one place that decides whether a file may be served.
enum RecordReading {
    /// How much a read fetches in its first system call: small records come in one read.
    static let firstReadSize = 64 * 1024

    /// How often a slot whose checksum fails is read again before the file is judged damaged:
    /// another process may be rewriting the last-use slot at that very moment (a torn read).
    static let slotRetries = 3

    /// A verified header and, for a small file, the bytes that followed it.
    struct Header {
        var header: RecordHeader
        /// The payload, if the first read already held all of it.
        var payload: Data?
        /// The file's size in bytes.
        var size: Int
    }

    /// Reads and checks the fixed header of `file`. A failing slot checksum is re-read a few
    /// times (a concurrent slot update), then reported.
    static func fixedHeader(of file: SystemFile) throws -> RecordHeader.Fixed {
        var attempt = 0
        while true {
            let bytes = try file.read(count: RecordFormat.fixedHeaderSize, at: 0)
            do {
                return try bytes.withUnsafeBytes { buffer throws(CacheEvent.CorruptionReason) in
                    try RecordHeader.decodeFixed(buffer)
                }
            } catch CacheEvent.CorruptionReason.slotChecksumMismatch where attempt < slotRetries {
                attempt += 1
            }
        }
    }

    /// Reads and checks the header of `file` (fixed part, key, metadata), checks the file length,
    /// and returns the payload too if it came with the first read.
    ///
    /// - Throws: a ``CacheEvent/CorruptionReason`` for a damaged file, a ``SystemError`` if the
    ///   file cannot be read.
    static func header(of file: SystemFile) throws -> Header {
        let size = try file.size()
        guard size >= RecordFormat.fixedHeaderSize else { throw CacheEvent.CorruptionReason.truncated }
        var first = try file.read(count: min(size, firstReadSize), at: 0)
        var attempt = 0
        var fixed: RecordHeader.Fixed
        while true {
            do {
                fixed = try first.withUnsafeBytes { buffer throws(CacheEvent.CorruptionReason) in
                    try RecordHeader.decodeFixed(buffer)
                }
                break
            } catch CacheEvent.CorruptionReason.slotChecksumMismatch where attempt < slotRetries {
                attempt += 1
                let slots = try file.read(count: RecordFormat.fixedHeaderSize - RecordFormat.usageSlotOffset, at: RecordFormat.usageSlotOffset)
                guard slots.count == RecordFormat.fixedHeaderSize - RecordFormat.usageSlotOffset else {
                    throw CacheEvent.CorruptionReason.truncated
                }
                first.replaceSubrange(RecordFormat.usageSlotOffset..<RecordFormat.fixedHeaderSize, with: slots)
            }
        }
        if size < fixed.fileLength { throw CacheEvent.CorruptionReason.truncated }
        if size > fixed.fileLength { throw CacheEvent.CorruptionReason.trailingBytes }
        if first.count < fixed.headerLength {
            first = try file.read(count: fixed.headerLength, at: 0)
            guard first.count == fixed.headerLength else { throw CacheEvent.CorruptionReason.truncated }
        }
        let header = try first.withUnsafeBytes { buffer throws(CacheEvent.CorruptionReason) in
            try RecordHeader.decode(buffer)
        }
        // The slots may have been re-read above; keep the values that verified.
        var verified = header
        verified.lastUse = fixed.lastUse
        verified.pinCount = fixed.pinCount
        var payload: Data?
        if first.count >= fixed.fileLength {
            payload = Data(first[fixed.headerLength..<fixed.fileLength])
        }
        return Header(header: verified, payload: payload, size: size)
    }

    /// Reads the payload of `file` (unless the header read already holds it) and checks its CRC.
    static func payload(of file: SystemFile, header: Header) throws -> Data {
        let length = Int(header.header.payloadLength)
        var payload: Data
        if let prefetched = header.payload {
            payload = prefetched
        } else {
            payload = Data(count: length)
            let read = try payload.withUnsafeMutableBytes { buffer in
                try file.read(into: buffer, at: header.header.headerLength)
            }
            guard read == length else { throw CacheEvent.CorruptionReason.truncated }
        }
        guard CRC32C.checksum(payload) == header.header.payloadCRC else {
            throw CacheEvent.CorruptionReason.payloadChecksumMismatch
        }
        return payload
    }

    /// Checks the payload CRC of `file` by reading it in chunks of `chunkSize` bytes, so a large
    /// payload is verified without being held in memory.
    static func verifyPayload(of file: SystemFile, header: Header, chunkSize: Int = 1 << 20) throws {
        let length = Int(header.header.payloadLength)
        var crc = CRC32C()
        var buffer = [UInt8](repeating: 0, count: min(max(length, 1), chunkSize))
        var offset = 0
        while offset < length {
            let count = min(buffer.count, length - offset)
            let read = try buffer.withUnsafeMutableBytes { raw in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]), at: header.header.headerLength + offset)
            }
            guard read == count else { throw CacheEvent.CorruptionReason.truncated }
            buffer.withUnsafeBytes { raw in crc.update(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
            offset += count
        }
        guard crc.value == header.header.payloadCRC else {
            throw CacheEvent.CorruptionReason.payloadChecksumMismatch
        }
    }
}
