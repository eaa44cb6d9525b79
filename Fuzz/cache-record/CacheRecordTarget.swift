// Fuzz target for the DiskCache record files read back from disk (Sources/TransitCache/Records:
// RecordFormat.swift, RecordReading.swift, OpenRecord.swift; Integrity/CRC32C.swift): the reader
// is "the one place that decides whether a file may be served". Each input writes one file in a
// temporary folder and reads it back as `DiskCache` does (`RecordReading.header(of:)`, then
// `payload(of:header:)`, or `verifyPayload` and `OpenRecord.readPayload` in pieces).
//
// The input: a mode byte, the record's fields (key and metadata lengths, created-at, TTL, last
// use, pin count: fuzzer-chosen, hostile values included), damage parameters, then the key, the
// metadata and the payload. The mode's low three bits say what is done to the file:
//   0 intact            1 one byte changed        2 up to four bytes changed
//   3 truncated         4 garbage appended        5 a range overwritten with input bytes
//   6 forged: the fixed header written field by field from fuzzer values (lengths included) with
//     valid checksums, so hostile lengths pass the CRCs      7 the rest of the input is the file
// The high five bits: 1 grows the metadata past the reader's first 64 KiB read; 2 makes the key
// 16 KiB or one byte more (the limit); anything else leaves the sizes as they are.
//
// Invariants:
// - the header `RecordHeader.encoded()` writes is the documented layout (RecordFormat.swift),
//   byte for byte, as this harness writes it from the table;
// - CRC32C (slicing by 8) equals the bitwise definition of CRC-32C, for every payload;
// - a record the cache can write (key ≤ 16 KiB, metadata ≤ 1 MiB) reads back identical: key,
//   metadata, payload, lengths, CRC, created-at, TTL, last use, pin count; also in pieces, and
//   copied file to file; a record over a limit is refused;
// - one changed byte, a truncation or appended bytes are refused; any other damage is refused
//   or reads back identical (a collision of CRC-32C) — a file is never served altered;
// - the reader accepts a file exactly when the independent checks of this harness (the layout
//   and the checksums, from the format's documentation) say it is valid; what it reads is
//   what the file holds;
// - everything is refused with a `CacheEvent.CorruptionReason` (never another error, never a
//   crash), and no read allocates beyond the file's size: the target runs with
//   -malloc_limit_mb (Fuzz/cache-record/options) under the address sanitizer.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The temporary folder the files are written in (removed at exit).
nonisolated(unsafe) private var folderPath = ""
private func recordPath(_ name: String) -> String { folderPath + "/" + name }

/// In /dev/shm where there is one: on a disk file system each truncating rewrite costs a flush
/// (ext4's auto_da_alloc), which made the target 20 times slower.
private func makeFolder() -> String {
    let parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    var template = Array((parent + "/fuzz-cache-record.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { fail("cannot make a temporary folder: errno \(errno)") }
    atexit {
        for name in ["record", "copy"] { unlink(recordPath(name)) }
        rmdir(folderPath)
    }
    return String(cString: made)
}

func fuzzTarget(_ bytes: [UInt8]) {
    if folderPath.isEmpty { folderPath = makeFolder() }
    var input = FuzzInput(bytes)
    let mode = input.byte()
    var header = RecordHeader(key: [], metadata: [], payloadLength: 0, payloadCRC: 0,
                              createdAt: input.int64(), ttl: input.int64(), lastUse: input.int64(), pinCount: input.uint32())
    let keyLength = Int(input.byte())
    let metadataLength = input.uint16() % 2048
    let damage = (position: input.uint16(), value: input.byte(), count: input.byte(), chunk: input.byte(), lengths: input.int64())
    header.key = input.take(keyLength)
    header.metadata = input.take(metadataLength)
    switch mode >> 3 {
    case 1: header.metadata = grown(header.metadata, to: RecordReading.firstReadSize + metadataLength)
    case 2: header.key = grown(header.key, to: RecordFormat.maximumKeyLength + Int(damage.value & 1))
    default: break
    }
    let payload = Array(input.bytes)

    require(CRC32C.checksum(payload) == bitwiseCRC32C(payload), "CRC32C of \(payload.count) bytes is \(CRC32C.checksum(payload)), the bitwise definition gives \(bitwiseCRC32C(payload))")
    header.payloadLength = UInt64(payload.count)
    header.payloadCRC = CRC32C.checksum(payload)
    let encoded = header.encoded()
    let documented = layout(header, lengths: nil, rest: header.key + header.metadata) + header.key + header.metadata
    require(same(encoded, documented), "RecordHeader.encoded() differs from the documented layout at byte \(encoded.indices.first { encoded[$0] != documented[$0] } ?? min(encoded.count, documented.count))")
    let written = encoded + payload
    let writable = header.key.count <= RecordFormat.maximumKeyLength && header.metadata.count <= RecordFormat.maximumMetadataLength

    var file = written
    switch mode & 7 {
    case 0:
        break
    case 1:
        file[damage.position % file.count] ^= damage.value == 0 ? 0x80 : damage.value
    case 2:
        for index in 0..<(1 + Int(damage.count % 4)) {
            file[(damage.position &* (index + 1) &+ index &* 7919) % file.count] ^= damage.value &+ UInt8(truncatingIfNeeded: index)
        }
    case 3:
        file.removeSubrange((damage.position % file.count)...)
    case 4:
        file += Array(repeating: damage.value, count: 1 + Int(damage.count))
    case 5:
        let start = damage.position % file.count
        let garbage = bytes.suffix(1 + Int(damage.count) % 64)
        file.replaceSubrange(start..<min(file.count, start + garbage.count), with: garbage.prefix(file.count - start))
    case 6:
        let rest = header.key + header.metadata + payload
        file = layout(header, lengths: damage.lengths, rest: rest) + rest
    default:
        file = Array(bytes.dropFirst())
    }

    let handle = writeFile(file, to: recordPath("record"))
    let outcome = readBack(handle, chunk: 1 + Int(damage.chunk))
    let valid = independentlyValid(file)

    switch mode & 7 {
    case 0 where writable:
        guard case .accepted(let read, let readPayload) = outcome else { fail("an intact record was refused: \(outcome)") }
        require(same(read, header), "an intact record reads back as \(read), not \(header)")
        require(same(readPayload, payload), "an intact record's payload reads back altered")
    case 0:
        require(outcome.isRefused, "a record with a \(header.key.count)-byte key and \(header.metadata.count) bytes of metadata (over a limit) was accepted")
    case 1, 3, 4:
        require(outcome.isRefused, "a file \(["", "with one byte changed", "", "truncated", "with bytes appended"][Int(mode & 7)]) was accepted: \(outcome)")
    case 2, 5:
        if case .accepted(let read, let readPayload) = outcome {
            require(same(read, header) && same(readPayload, payload), "a damaged file was served altered: \(read)")
        }
    default:
        break  // forged and raw files: the documented checks below are the oracle
    }
    // Whatever the file: accepted exactly when the documented checks pass, with what it holds.
    switch outcome {
    case .accepted(let read, let readPayload):
        guard let valid else { fail("the reader accepted a file the documented checks refuse") }
        require(same(read, valid.header) && same(readPayload, valid.payload), "the reader read \(read), the file holds \(valid.header)")
    case .refused(let reason):
        require(valid == nil, "the reader refused (\(reason)) a file the documented checks accept: \(valid!.header)")
    }
}

// MARK: - Reading as DiskCache does

private enum Outcome: CustomStringConvertible {
    case accepted(RecordHeader, [UInt8])
    case refused(CacheEvent.CorruptionReason)

    var isRefused: Bool { if case .refused = self { true } else { false } }
    var description: String {
        switch self {
        case .accepted(let header, _): return "accepted \(header)"
        case .refused(let reason): return "refused: \(reason)"
        }
    }
}

private func readBack(_ file: SystemFile, chunk: Int) -> Outcome {
    do {
        let fixed = try RecordReading.fixedHeader(of: file)
        let read = try RecordReading.header(of: file)
        require(fixed.headerLength == read.header.headerLength && fixed.payloadLength == read.header.payloadLength,
                "fixedHeader(of:) and header(of:) read different lengths")
        require(read.size == read.header.fileLength, "an accepted header's file length \(read.header.fileLength) is not the file's size \(read.size)")
        _ = read.header.expiresAt
        let payload = try RecordReading.payload(of: file, header: read)
        // The other way to serve: verified in chunks, read in pieces from the file, copied.
        var streamed = read
        streamed.payload = nil
        try RecordReading.verifyPayload(of: file, header: streamed, chunkSize: chunk)
        let record = OpenRecord(key: "", header: read.header, file: file, payload: nil, folderPath: folderPath, generation: .none)
        var pieces: [UInt8] = []
        while pieces.count < record.payloadLength {
            let piece = try record.readPayload(at: pieces.count, count: chunk)
            require(!piece.isEmpty, "readPayload returned nothing at \(pieces.count) of \(record.payloadLength)")
            pieces += piece
        }
        require(same(pieces, Array(payload)), "the payload read in pieces of \(chunk) differs from the payload read at once")
        let copy = try SystemFile(path: recordPath("copy"), flags: O_RDWR | O_CREAT | O_TRUNC)
        try record.copyPayload(to: copy, at: 3)
        let copied = try copy.read(count: payload.count + 1, at: 3)
        require(same(copied, Array(payload)), "the payload copied file to file differs")
        return .accepted(read.header, Array(payload))
    } catch let reason as CacheEvent.CorruptionReason {
        return .refused(reason)
    } catch {
        fail("reading a record file threw \(error), not a CacheEvent.CorruptionReason")
    }
}

private func writeFile(_ bytes: [UInt8], to path: String) -> SystemFile {
    do {
        let file = try SystemFile(path: path, flags: O_RDWR | O_CREAT | O_TRUNC)
        try file.write(bytes, at: 0)
        return file
    } catch {
        fail("cannot write \(path): \(error)")
    }
}

// MARK: - The format, from its documentation

/// The fixed header as the table in RecordFormat.swift lays it out, its CRC over the bytes
/// `rest` that follow it up to the header length. `lengths` (forged files) sets the
/// header-length, key-length, metadata-length and payload-length fields instead of the true ones.
private func layout(_ header: RecordHeader, lengths: Int64?, rest: [UInt8]) -> [UInt8] {
    var bytes = Array("TRCR".utf8)
    func put<T: FixedWidthInteger>(_ value: T) {
        for index in 0..<(T.bitWidth / 8) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }
    var headerLength = UInt32(80 + header.key.count + header.metadata.count)
    var keyLength = UInt32(header.key.count), metadataLength = UInt32(header.metadata.count)
    var payloadLength = header.payloadLength
    if let lengths {
        // Each forged field is the true one, or off by a little, or large, as the bits say.
        let bits = UInt64(bitPattern: lengths)
        func forged(_ value: UInt32, _ shift: UInt64) -> UInt32 {
            switch (bits >> shift) & 3 {
            case 0: return value
            case 1: return value &+ UInt32(truncatingIfNeeded: (bits >> (shift + 2)) & 7) &- 3
            case 2: return UInt32(truncatingIfNeeded: bits >> 32)
            default: return UInt32.max &- UInt32(truncatingIfNeeded: (bits >> (shift + 2)) & 0xFF)
            }
        }
        headerLength = forged(headerLength, 0)
        keyLength = forged(keyLength, 8)
        metadataLength = forged(metadataLength, 16)
        switch (bits >> 24) & 3 {
        case 0: break
        case 1: payloadLength = payloadLength &+ ((bits >> 26) & 7) &- 3
        case 2: payloadLength = bits >> 8
        default: payloadLength = UInt64.max >> ((bits >> 26) & 3)
        }
    }
    put(UInt16(1)); put(UInt16(0)); put(headerLength); put(keyLength); put(metadataLength)
    put(header.payloadCRC); put(payloadLength); put(header.createdAt); put(header.ttl)
    put(UInt32(0)); put(UInt32(0))
    let usage = bytes.count
    put(header.lastUse); put(UInt32(0)); put(bitwiseCRC32C(bytes[usage...]))
    let pin = bytes.count
    put(header.pinCount); put(bitwiseCRC32C(bytes[pin...]))
    let crc = bitwiseCRC32C(bytes[0..<48] + bytes[52..<56] + rest.prefix(max(0, Int(headerLength) - 80)))
    for index in 0..<4 { bytes[48 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
    return bytes
}

/// The header and payload of `file` if the documented checks pass: magic, version 1, header
/// length = 80 + key + metadata (each within its limit), file length = header + payload, and
/// the header, usage-slot, pin-slot and payload CRCs.
private func independentlyValid(_ file: [UInt8]) -> (header: RecordHeader, payload: [UInt8])? {
    guard file.count >= 80, file.starts(with: Array("TRCR".utf8)) else { return nil }
    func get<T: FixedWidthInteger>(_ type: T.Type, _ offset: Int) -> T {
        (0..<(T.bitWidth / 8)).reduce(T.zero) { $0 | T(truncatingIfNeeded: file[offset + $1]) << (8 * $1) }
    }
    let headerLength = Int(get(UInt32.self, 8)), keyLength = Int(get(UInt32.self, 12)), metadataLength = Int(get(UInt32.self, 16))
    let payloadLength = get(UInt64.self, 24)
    guard get(UInt16.self, 4) == 1, keyLength <= 16 * 1024, metadataLength <= 1024 * 1024,
          headerLength == 80 + keyLength + metadataLength,
          payloadLength == UInt64(file.count - min(file.count, headerLength)), file.count >= headerLength,
          bitwiseCRC32C(file[0..<48] + file[52..<56] + file[80..<headerLength]) == get(UInt32.self, 48),
          bitwiseCRC32C(file[56..<68]) == get(UInt32.self, 68),
          bitwiseCRC32C(file[72..<76]) == get(UInt32.self, 76)
    else { return nil }
    let payload = Array(file[headerLength...])
    guard bitwiseCRC32C(payload) == get(UInt32.self, 20) else { return nil }
    let header = RecordHeader(key: Array(file[80..<(80 + keyLength)]), metadata: Array(file[(80 + keyLength)..<headerLength]),
                              payloadLength: payloadLength, payloadCRC: get(UInt32.self, 20), createdAt: get(Int64.self, 32),
                              ttl: get(Int64.self, 40), lastUse: get(Int64.self, 56), pinCount: get(UInt32.self, 72))
    return (header, payload)
}

/// CRC-32C by its definition: reflected, polynomial 0x1EDC6F41 (0x82F63B78 reflected), initial
/// value and final XOR 0xFFFFFFFF; a byte at a time through a table of the bitwise steps.
private func bitwiseCRC32C<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
    // Through a buffer pointer: the index is below 256 by construction, and the bounds checks of
    // an array subscript, each traced by the fuzzer's instrumentation, were 40 % of the run.
    byteSteps.withUnsafeBufferPointer { steps in
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc >> 8) ^ steps[Int((crc ^ UInt32(byte)) & 0xFF)] }
        return ~crc
    }
}

/// Eight bitwise steps of the CRC for each byte value.
private let byteSteps: [UInt32] = (0..<256).map { value in
    var crc = UInt32(value)
    for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
    return crc
}

/// `bytes` repeated (zeros if empty) to `count` bytes.
private func grown(_ bytes: [UInt8], to count: Int) -> [UInt8] {
    guard !bytes.isEmpty else { return Array(repeating: 0, count: count) }
    var result: [UInt8] = []
    result.reserveCapacity(count + bytes.count)
    while result.count < count { result += bytes }
    result.removeLast(result.count - count)
    return result
}

// Comparisons with memcmp: the instrumented element-by-element `==` of large arrays cost more
// than everything else together.
private func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.count == b.count && a.withUnsafeBytes { a in b.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
}

private func same(_ a: RecordHeader, _ b: RecordHeader) -> Bool {
    a.payloadLength == b.payloadLength && a.payloadCRC == b.payloadCRC && a.createdAt == b.createdAt && a.ttl == b.ttl
        && a.lastUse == b.lastUse && a.pinCount == b.pinCount && same(a.key, b.key) && same(a.metadata, b.metadata)
}

extension FuzzInput {
    mutating func uint32() -> UInt32 { (0..<4).reduce(0) { value, _ in value << 8 | UInt32(byte()) } }
    mutating func int64() -> Int64 { Int64(bitPattern: (0..<8).reduce(0) { value, _ in value << 8 | UInt64(byte()) }) }
    mutating func take(_ count: Int) -> [UInt8] { (0..<count).compactMap { _ in bytes.isEmpty ? nil : byte() } }
}
