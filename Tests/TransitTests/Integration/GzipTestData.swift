import Foundation

/// Gzip bodies for tests, written by hand: one deflate block with the fixed Huffman codes of
/// RFC 1951 that repeats a zero byte (a literal, then matches of 258 bytes at distance 1). No
/// compression library is needed, and what the bytes decode to is known exactly.
enum GzipTestData {
    /// A complete gzip member whose body decodes to `count` zero bytes (CRC-32 and size checked
    /// by any decoder).
    static func zeros(count: Int) -> Data {
        precondition(count >= 1)
        var writer = BitWriter()
        writer.bytes = header
        writer.blockHeader()
        writer.literalZero()
        let matches = (count - 1) / 258
        for _ in 0..<matches { writer.match258() }
        for _ in 0..<((count - 1) % 258) { writer.literalZero() }
        writer.endOfBlock()
        var data = Data(writer.finished())
        data.append(littleEndian: crc32OfZeros(count))
        data.append(littleEndian: UInt32(truncatingIfNeeded: count))
        return data
    }

    /// The start of a gzip member that never ends: the compressed bytes decode to at least
    /// `decodedBytes` zero bytes, and more is always to come (no end of block, no trailer). A
    /// server that sends it and holds the connection is a decompression bomb of any size.
    static func bomb(decodedBytes: Int) -> Data {
        // The matches repeat every 8 (104 bits, 13 bytes): after the first 24 bytes, the stream is
        // the same 13 bytes over and over.
        var writer = BitWriter()
        writer.bytes = header
        writer.blockHeader()
        writer.literalZero()
        for _ in 0..<16 { writer.match258() }
        let first = writer.bytes
        let unit = first[24..<37]
        let units = decodedBytes / (8 * 258) + 1
        var block = Data()
        for _ in 0..<min(units, 1024) { block.append(contentsOf: unit) }
        var data = Data(first[0..<24])
        data.reserveCapacity(24 + units * 13)
        for _ in 0..<(units / 1024) { data.append(block) }
        for _ in 0..<(units % 1024) { data.append(contentsOf: unit) }
        return data
    }

    /// ID1 ID2, deflate, no flags, no time, no extra flags, unknown OS.
    private static let header: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]

    private static func crc32OfZeros(_ count: Int) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for _ in 0..<count {
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
            }
        }
        return ~crc
    }

    /// Bits packed as deflate packs them: from the least significant bit of each byte.
    private struct BitWriter {
        var bytes: [UInt8] = []
        private var current: UInt8 = 0
        private var used = 0

        mutating func bit(_ value: Bool) {
            if value { current |= 1 << used }
            used += 1
            if used == 8 {
                bytes.append(current)
                current = 0
                used = 0
            }
        }

        /// A Huffman code: its most significant bit first.
        mutating func code(_ value: Int, length: Int) {
            for shift in stride(from: length - 1, through: 0, by: -1) { bit((value >> shift) & 1 == 1) }
        }

        /// BFINAL = 1, BTYPE = 01 (fixed Huffman codes).
        mutating func blockHeader() {
            bit(true)
            bit(true)
            bit(false)
        }

        mutating func literalZero() { code(0x30, length: 8) }

        /// Length 258 (symbol 285, no extra bits), distance 1 (code 0, no extra bits).
        mutating func match258() {
            code(0xC5, length: 8)
            code(0, length: 5)
        }

        mutating func endOfBlock() { code(0, length: 7) }

        /// The bytes, the last one padded with zero bits.
        func finished() -> [UInt8] {
            used == 0 ? bytes : bytes + [current]
        }
    }
}

private extension Data {
    mutating func append(littleEndian value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
