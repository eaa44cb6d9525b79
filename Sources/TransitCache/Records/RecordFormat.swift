import Foundation

/// The on-disk layout of a record file (format version 1). All integers are little-endian.
///
/// ```
/// offset size  field
///  0      4    magic "TRCR"
///  4      2    format version (1)
///  6      2    flags (0; reserved)
///  8      4    header length: bytes before the payload (80 + key + metadata)
/// 12      4    key length (UTF-8 bytes)
/// 16      4    metadata length
/// 20      4    payload CRC-32C
/// 24      8    payload length
/// 32      8    created at, milliseconds since 1970
/// 40      8    TTL in milliseconds (0: never expires)
/// 48      4    header CRC-32C: bytes 0..<48, 52..<56 and 80..<header length
/// 52      4    reserved (0)
/// 56     16    usage slot: last use (8, ms since 1970), reserved (4), CRC-32C of those 12 bytes (4)
/// 72      8    pin slot: pin count (4), CRC-32C of those 4 bytes (4)
/// 80      k    key
/// 80+k    m    metadata
/// header  n    payload
/// ```
///
/// Every byte of the file is covered by a checksum: the header CRC covers the fixed header, the
/// key, the metadata and — through the payload CRC and length it contains — the payload; the two
/// slots, the only bytes that change after a record is written (last use on every read, the pin
/// count), carry their own CRC so that updating them never rewrites the payload. A file whose
/// length is not exactly header length + payload length is truncated or has trailing garbage.
enum RecordFormat {
    static let magic: [UInt8] = Array("TRCR".utf8)
    static let version: UInt16 = 1
    static let fixedHeaderSize = 80
    static let headerCRCOffset = 48
    static let usageSlotOffset = 56
    static let usageSlotSize = 16
    static let pinSlotOffset = 72
    static let pinSlotSize = 8
    /// How much of a file a scan reads at once: the fixed header and, usually, key and metadata.
    static let scanReadSize = 4096
    /// The longest key and the largest metadata a record may have (16 KiB and 1 MiB); a header that claims more is damaged.
    static let maximumKeyLength = 16 * 1024
    static let maximumMetadataLength = 1024 * 1024

    /// The usage slot for `lastUse`.
    static func usageSlot(lastUse: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(usageSlotSize)
        bytes.appendLittleEndian(lastUse)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(CRC32C.checksum(bytes))
        return bytes
    }

    /// The pin slot for `pinCount`.
    static func pinSlot(pinCount: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pinSlotSize)
        bytes.appendLittleEndian(pinCount)
        bytes.appendLittleEndian(CRC32C.checksum(bytes))
        return bytes
    }

    /// Reads the last use from a usage slot (`bytes` starts at the slot), or `nil` if its CRC fails.
    static func lastUse(fromUsageSlot bytes: UnsafeRawBufferPointer) -> Int64? {
        guard bytes.count >= usageSlotSize,
              CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<12])) == bytes.littleEndian(UInt32.self, at: 12)
        else { return nil }
        return bytes.littleEndian(Int64.self, at: 0)
    }

    /// Reads the pin count from a pin slot (`bytes` starts at the slot), or `nil` if its CRC fails.
    static func pinCount(fromPinSlot bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard bytes.count >= pinSlotSize,
              CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<4])) == bytes.littleEndian(UInt32.self, at: 4)
        else { return nil }
        return bytes.littleEndian(UInt32.self, at: 0)
    }

    /// The header CRC of a complete header (`bytes` holds at least `headerLength` bytes).
    static func headerCRC(_ bytes: UnsafeRawBufferPointer, headerLength: Int) -> UInt32 {
        var crc = CRC32C()
        crc.update(UnsafeRawBufferPointer(rebasing: bytes[0..<headerCRCOffset]))
        crc.update(UnsafeRawBufferPointer(rebasing: bytes[(headerCRCOffset + 4)..<usageSlotOffset]))
        crc.update(UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderSize..<headerLength]))
        return crc.value
    }
}

/// The fields of a record header, as written and as read back.
struct RecordHeader: Equatable, Sendable {
    var key: [UInt8]
    var metadata: [UInt8]
    var payloadLength: UInt64
    var payloadCRC: UInt32
    var createdAt: Int64
    /// Milliseconds; 0 means the record never expires.
    var ttl: Int64
    var lastUse: Int64
    var pinCount: UInt32

    var headerLength: Int { RecordFormat.fixedHeaderSize + key.count + metadata.count }
    var fileLength: Int { headerLength + Int(payloadLength) }
    /// The instant the record expires, in milliseconds since 1970, or `nil` if it never does.
    var expiresAt: Int64? { ttl > 0 ? createdAt.addingReportingOverflow(ttl).partialValue : nil }

    /// The complete header: fixed part with both slots and the header CRC, key and metadata.
    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerLength)
        bytes.append(contentsOf: RecordFormat.magic)
        bytes.appendLittleEndian(RecordFormat.version)
        bytes.appendLittleEndian(UInt16(0))
        bytes.appendLittleEndian(UInt32(headerLength))
        bytes.appendLittleEndian(UInt32(key.count))
        bytes.appendLittleEndian(UInt32(metadata.count))
        bytes.appendLittleEndian(payloadCRC)
        bytes.appendLittleEndian(payloadLength)
        bytes.appendLittleEndian(createdAt)
        bytes.appendLittleEndian(ttl)
        bytes.appendLittleEndian(UInt32(0))  // header CRC, filled in below
        bytes.appendLittleEndian(UInt32(0))
        bytes.append(contentsOf: RecordFormat.usageSlot(lastUse: lastUse))
        bytes.append(contentsOf: RecordFormat.pinSlot(pinCount: pinCount))
        bytes.append(contentsOf: key)
        bytes.append(contentsOf: metadata)
        let crc = bytes.withUnsafeBytes { RecordFormat.headerCRC($0, headerLength: headerLength) }
        Swift.withUnsafeBytes(of: crc.littleEndian) { crcBytes in
            bytes.replaceSubrange(RecordFormat.headerCRCOffset..<(RecordFormat.headerCRCOffset + 4), with: crcBytes)
        }
        return bytes
    }

    /// The fixed part of a header, validated on its own: magic, version, lengths and slot CRCs.
    struct Fixed: Equatable, Sendable {
        var headerLength: Int
        var keyLength: Int
        var metadataLength: Int
        var payloadCRC: UInt32
        var payloadLength: UInt64
        var createdAt: Int64
        var ttl: Int64
        var headerCRC: UInt32
        var lastUse: Int64
        var pinCount: UInt32

        var fileLength: Int { headerLength + Int(payloadLength) }
        var expiresAt: Int64? { ttl > 0 ? createdAt.addingReportingOverflow(ttl).partialValue : nil }
    }

    /// Parses and checks the first 80 bytes of a file.
    static func decodeFixed(_ bytes: UnsafeRawBufferPointer) throws(CacheEvent.CorruptionReason) -> Fixed {
        guard bytes.count >= RecordFormat.fixedHeaderSize else { throw .truncated }
        guard bytes[0] == RecordFormat.magic[0], bytes[1] == RecordFormat.magic[1],
              bytes[2] == RecordFormat.magic[2], bytes[3] == RecordFormat.magic[3]
        else { throw .notARecord }
        let version = bytes.littleEndian(UInt16.self, at: 4)
        guard version == RecordFormat.version else { throw .unsupportedVersion(Int(version)) }
        let headerLength = Int(bytes.littleEndian(UInt32.self, at: 8))
        let keyLength = Int(bytes.littleEndian(UInt32.self, at: 12))
        let metadataLength = Int(bytes.littleEndian(UInt32.self, at: 16))
        let payloadLength = bytes.littleEndian(UInt64.self, at: 24)
        guard keyLength <= RecordFormat.maximumKeyLength, metadataLength <= RecordFormat.maximumMetadataLength,
              headerLength == RecordFormat.fixedHeaderSize + keyLength + metadataLength,
              payloadLength <= UInt64(Int.max / 2)
        else { throw .headerChecksumMismatch }
        guard let lastUse = RecordFormat.lastUse(fromUsageSlot: UnsafeRawBufferPointer(rebasing: bytes[RecordFormat.usageSlotOffset...]))
        else { throw .slotChecksumMismatch }
        guard let pinCount = RecordFormat.pinCount(fromPinSlot: UnsafeRawBufferPointer(rebasing: bytes[RecordFormat.pinSlotOffset...]))
        else { throw .slotChecksumMismatch }
        return Fixed(
            headerLength: headerLength, keyLength: keyLength, metadataLength: metadataLength,
            payloadCRC: bytes.littleEndian(UInt32.self, at: 20), payloadLength: payloadLength,
            createdAt: bytes.littleEndian(Int64.self, at: 32), ttl: bytes.littleEndian(Int64.self, at: 40),
            headerCRC: bytes.littleEndian(UInt32.self, at: RecordFormat.headerCRCOffset),
            lastUse: lastUse, pinCount: pinCount
        )
    }

    /// Parses and checks a complete header (`bytes` holds at least its header length).
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(CacheEvent.CorruptionReason) -> RecordHeader {
        let fixed = try decodeFixed(bytes)
        guard bytes.count >= fixed.headerLength else { throw .truncated }
        guard RecordFormat.headerCRC(bytes, headerLength: fixed.headerLength) == fixed.headerCRC else {
            throw .headerChecksumMismatch
        }
        let keyEnd = RecordFormat.fixedHeaderSize + fixed.keyLength
        return RecordHeader(
            key: Array(bytes[RecordFormat.fixedHeaderSize..<keyEnd]),
            metadata: Array(bytes[keyEnd..<fixed.headerLength]),
            payloadLength: fixed.payloadLength, payloadCRC: fixed.payloadCRC,
            createdAt: fixed.createdAt, ttl: fixed.ttl, lastUse: fixed.lastUse, pinCount: fixed.pinCount
        )
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    func littleEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
