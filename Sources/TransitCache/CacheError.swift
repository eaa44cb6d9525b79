import Foundation
import Transit

/// What went wrong in a ``DiskCache`` operation, and what to do about it.
///
/// Reads never throw for a damaged record: a corrupted, truncated or foreign file is a miss (and a
/// ``CacheEvent/corruptRecordRemoved(key:file:reason:)`` event). These errors are for operations
/// the caller asked for and the cache could not do.
public enum CacheError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The cache folder cannot be written (a read-only volume, or missing permissions). Records
    /// already there can still be read; nothing can be stored, removed or pinned.
    case folderNotWritable(path: String, errno: Int32)
    /// The volume holding the cache folder is full (or the user's quota is used up).
    case folderFull(path: String, errno: Int32)
    /// The record is larger than the cache's ``DiskCache/Configuration/maximumRecordSize``.
    case recordTooLarge(size: Int, limit: Int)
    /// The key is longer than 16 KiB in UTF-8 (`limit`).
    case keyTooLong(length: Int, limit: Int)
    /// The metadata is longer than 1 MiB (`limit`).
    case metadataTooLarge(length: Int, limit: Int)
    /// A TTL that is zero or negative: such a record would be expired before it is written.
    case invalidTTL(Duration)
    /// No record with this key is stored (pinning, unpinning).
    case recordNotFound(key: String)
    /// `unpin(_:)` on a record that is not pinned.
    case recordNotPinned(key: String)
    /// A record writer was used after it was committed or discarded.
    case writerClosed
    /// A value could not be encoded for storage (value caching); the encoder's message.
    case encodingFailed(String)
    /// Any other file-system failure: the operation, the path and the system error.
    case fileSystem(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case let .folderNotWritable(path, code):
            return "The cache folder \(path) is not writable (\(Self.text(code))). Records can be read but not stored; use a writable folder."
        case let .folderFull(path, code):
            return "The volume of the cache folder \(path) is full (\(Self.text(code))). Free space or lower the cache's size limit."
        case let .recordTooLarge(size, limit):
            return "The record (\(size) bytes) is larger than the cache's maximum record size (\(limit) bytes)."
        case let .keyTooLong(length, limit):
            return "The cache key is \(length) bytes long; keys may be at most \(limit) bytes (UTF-8)."
        case let .metadataTooLarge(length, limit):
            return "The record's metadata is \(length) bytes; at most \(limit) bytes are allowed."
        case let .invalidTTL(ttl):
            return "A record's TTL must be positive; got \(ttl)."
        case let .recordNotFound(key):
            return "No record is stored under the key \"\(key)\"."
        case let .recordNotPinned(key):
            return "The record \"\(key)\" is not pinned, so it cannot be unpinned."
        case .writerClosed:
            return "The record writer was already committed or discarded."
        case .encodingFailed(let message):
            return "The value could not be encoded for the cache: \(message)"
        case let .fileSystem(operation, path, code):
            return "Cache \(operation) failed for \(path): \(Self.text(code))."
        }
    }

    private static func text(_ code: Int32) -> String {
        "\(String(cString: strerror(code))), errno \(code)"
    }

    /// The error for a failed system call (a ``SystemError``; any other error counts as `EIO`).
    static func system(_ operation: String, path: String, error: any Error) -> CacheError {
        system(operation, path: path, errno: errorCode(error))
    }

    /// The error for a failed system call, classified: read-only and permission failures become
    /// ``folderNotWritable(path:errno:)``, a full volume ``folderFull(path:errno:)``.
    static func system(_ operation: String, path: String, errno code: Int32) -> CacheError {
        switch code {
        case EROFS, EACCES, EPERM: return .folderNotWritable(path: path, errno: code)
        case ENOSPC, EDQUOT, EFBIG: return .folderFull(path: path, errno: code)
        default: return .fileSystem(operation: operation, path: path, errno: code)
        }
    }
}

/// The errno of a ``SystemError``, `EIO` for any other error.
func errorCode(_ error: any Error) -> Int32 {
    (error as? SystemError)?.code ?? EIO
}
