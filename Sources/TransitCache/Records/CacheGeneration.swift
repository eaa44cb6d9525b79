/// What a write compares when it commits, to tell whether ``DiskCache/removeAll()`` ran since it
/// started: the folder's generation, kept in the folder's lock file so that every instance and
/// process on the folder sees a `removeAll()`, and this instance's own count of them, which holds
/// even where the lock file cannot be written.
///
/// A write takes the generation when it starts (an HTTP exchange: when it looks the request up,
/// before it opens a stored response) and commits only if, read again under the folder lock, the
/// generation is the same.
struct CacheGeneration: Equatable, Sendable {
    /// The folder's generation, or `nil` if the lock file's bytes are damaged.
    var folder: UInt64?
    /// How many times this instance ran `removeAll()`.
    var local: UInt64

    /// A generation no commit admits: that of a record opened only to be read.
    static let none = CacheGeneration(folder: nil, local: 0)

    /// `true` if a write that started at this generation may commit when the generation is
    /// `current`. A damaged folder generation admits nothing.
    func admits(_ current: CacheGeneration) -> Bool {
        folder != nil && self == current
    }
}

/// The folder's generation in the lock file (all integers little-endian):
///
/// ```
/// offset size  field
///  0      4    magic "TRGN"
///  4      8    generation
/// 12      4    CRC-32C of bytes 0..<12
/// ```
///
/// An empty lock file holds generation 0: the folder was never cleared (and a lock file written
/// before the generation existed reads so). Any other content is damaged. The bytes are written
/// in place, with one `pwrite`, under the folder lock.
enum GenerationFormat {
    static let magic: [UInt8] = Array("TRGN".utf8)
    static let size = 16

    /// The lock file's bytes for `generation`.
    static func encode(_ generation: UInt64) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(size)
        bytes.appendLittleEndian(generation)
        bytes.appendLittleEndian(CRC32C.checksum(bytes))
        return bytes
    }

    /// The generation in `bytes` (the lock file's content, or its first `size + 1` bytes); `nil`
    /// if they are damaged.
    static func decode(_ bytes: [UInt8]) -> UInt64? {
        if bytes.isEmpty { return 0 }
        guard bytes.count == size, bytes.starts(with: magic) else { return nil }
        return bytes.withUnsafeBytes { buffer -> UInt64? in
            guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<12])) == buffer.littleEndian(UInt32.self, at: 12) else {
                return nil
            }
            return buffer.littleEndian(UInt64.self, at: 4)
        }
    }
}
