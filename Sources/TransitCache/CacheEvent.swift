/// Something a ``DiskCache`` did on its own, or a failure it absorbed: observe
/// ``DiskCache/events`` to log or count them.
///
/// Reads turn damaged files into misses instead of errors; this is where they are reported.
public enum CacheEvent: Equatable, Sendable, CustomStringConvertible {
    /// Why a file was judged damaged.
    public enum CorruptionReason: Error, Equatable, Sendable, CustomStringConvertible {
        /// Shorter than its header says (a truncated file).
        case truncated
        /// Longer than its header says (trailing garbage).
        case trailingBytes
        /// Does not start with the record magic: not a record file.
        case notARecord
        /// A record format this version of the library does not read.
        case unsupportedVersion(Int)
        /// The header (fixed part, key or metadata) does not match its checksum.
        case headerChecksumMismatch
        /// The last-use or pin slot does not match its checksum.
        case slotChecksumMismatch
        /// The payload does not match its checksum (a flipped byte, a torn write).
        case payloadChecksumMismatch
        /// The header names another key than the one the file name was derived from.
        case keyMismatch

        public var description: String {
            switch self {
            case .truncated: return "truncated"
            case .trailingBytes: return "trailing bytes after the payload"
            case .notARecord: return "not a record file"
            case .unsupportedVersion(let version): return "unsupported format version \(version)"
            case .headerChecksumMismatch: return "header checksum mismatch"
            case .slotChecksumMismatch: return "usage or pin slot checksum mismatch"
            case .payloadChecksumMismatch: return "payload checksum mismatch"
            case .keyMismatch: return "the file belongs to another key"
            }
        }
    }

    /// Why a record was removed without being asked to.
    public enum RemovalReason: Equatable, Sendable {
        /// Its TTL had passed (garbage collection).
        case expired
        /// The cache was over its size limit and this was the least recently used record.
        case sizeLimit
        /// The cache was over its record-count limit and this was the least recently used record.
        case countLimit
    }

    /// A damaged file was found, removed and treated as a miss. `key` is the key that was asked
    /// for, if the file was found by a read (a scan does not know it).
    case corruptRecordRemoved(key: String?, file: String, reason: CorruptionReason)
    /// A record was removed by garbage collection or eviction.
    case recordRemoved(key: String, reason: RemovalReason)
    /// A temporary file left by a writer that died (a crash mid-write) was removed.
    case orphanedTemporaryFileRemoved(file: String)
    /// A write the cache attempted on its own behalf failed (e.g. a value cached by
    /// `cached(in:key:ttl:encoder:decoder:)`, or an HTTP response), with the error.
    case writeFailed(key: String, error: CacheError)
    /// A file-system operation of housekeeping failed (recording a use, removing a file).
    case housekeepingFailed(CacheError)
    /// The limits cannot be met because the remaining records are pinned.
    case limitsUnreachable(size: Int, count: Int)

    public var description: String {
        switch self {
        case let .corruptRecordRemoved(key, file, reason):
            return "removed damaged record \(file)\(key.map { " (key \"\($0)\")" } ?? ""): \(reason)"
        case let .recordRemoved(key, reason):
            return "removed record \"\(key)\": \(reason)"
        case let .orphanedTemporaryFileRemoved(file):
            return "removed temporary file \(file) left by an interrupted write"
        case let .writeFailed(key, error):
            return "could not store \"\(key)\": \(error)"
        case let .housekeepingFailed(error):
            return "housekeeping failed: \(error)"
        case let .limitsUnreachable(size, count):
            return "cache limits cannot be met: \(count) pinned records, \(size) bytes remain"
        }
    }
}
