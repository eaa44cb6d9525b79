import Foundation

/// A record read from a ``DiskCache``: the payload, the caller's metadata and the bookkeeping.
///
/// A record is only ever returned after its header and payload checksums were verified.
public struct CacheRecord: Sendable, Equatable {
    /// The key the record is stored under.
    public let key: String
    /// The payload.
    public let data: Data
    /// The metadata stored with the payload (opaque to the cache; empty if none).
    public let metadata: Data
    /// When the record was written.
    public let createdAt: Date
    /// When the record was used before this read (its creation, if it had not been read).
    public let lastUsedAt: Date
    /// When the record expires — ``createdAt`` plus the TTL it was stored with — or `nil` if it
    /// never does.
    public let expiresAt: Date?
    /// How many times the record is pinned; a pinned record is never evicted or collected.
    public let pinCount: Int

    /// `true` if the record is pinned at least once.
    var isPinned: Bool { pinCount > 0 }
}

/// How many records a ``DiskCache`` holds and how many bytes they take, as this instance knows it.
public struct CacheStatistics: Sendable, Equatable {
    /// Records in the index.
    public let count: Int
    /// Bytes of all records on disk (headers and payloads).
    public let totalSize: Int
    /// Records pinned at least once.
    public let pinnedCount: Int
}

/// What one garbage collection did.
public struct GarbageCollectionReport: Sendable, Equatable {
    /// Records removed because their TTL had passed.
    public internal(set) var expiredRemoved = 0
    /// Records removed to meet the size or count limit, least recently used first.
    public internal(set) var evicted = 0
    /// Damaged files removed.
    public internal(set) var corruptRemoved = 0
    /// Temporary files of interrupted writes removed.
    public internal(set) var orphansRemoved = 0
    /// Bytes freed by all of the above.
    public internal(set) var bytesFreed = 0

    /// An empty report.
    init() {}
}
