import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A persistent cache of records — a payload and metadata under a string key — in one folder.
///
/// What it guarantees:
/// - **Integrity.** Every file carries CRC-32C checksums over its header and its payload (see
///   the format in `RecordFormat`). A record is returned only after both verified; a flipped
///   byte, a truncated file or garbage is removed, reported on ``events`` and read as a miss.
/// - **Atomic writes.** A record is written to a temporary file in the same folder and renamed
///   over its final name, so a process killed mid-write leaves either the old record or the new
///   one, never half of one. Temporary files of dead writers are removed by the next scan.
/// - **Safe names.** A file's name is the SHA-256 digest of its key in hexadecimal: no key can
///   name a path outside the folder.
/// - **True LRU.** Every read records its time in a 16-byte slot of the file (the payload is not
///   rewritten). When the cache is over its size or record-count limit, the least recently
///   *used* records that are not pinned are removed first.
/// - **TTL and pins.** A record may expire after a TTL (it then reads as a miss and garbage
///   collection removes it); a pinned record is never evicted or collected. Pins are counted
///   and stored in the file, so they survive a relaunch.
/// - **Threads and processes.** Every method may be called from any thread. Several instances
///   (in one process or several) may share a folder: renames, pins and removals are serialised
///   by an `flock` on the folder's lock file, and eviction re-reads a file before removing it.
///   Each instance keeps its own index; `collectGarbage()` re-synchronises it with the folder.
/// - **`removeAll()` wins.** A write in progress when `removeAll()` runs — on any instance, in
///   any process — does not commit: the folder's generation, kept in the lock file, changes, and
///   every commit reads it again under the folder lock.
///
/// The methods block the calling thread on file I/O. From `async` code, run them with
/// ``perform(_:)``, which runs the work on the cache's own queue, never on a thread of the
/// cooperative pool: `try await cache.perform { try $0.pin(key) }`; as a cold signal, it is
/// `Signal(operation: { try await cache.perform { try $0.pin(key) } })`.
///
/// ```swift
/// let cache = try DiskCache(directory: cachesURL.appending(path: "thumbnails"))
/// try cache.store(imageData, forKey: url.absoluteString, ttl: .seconds(86_400))
/// if let record = try cache.record(forKey: url.absoluteString) { show(record.data) }
/// ```
public final class DiskCache: Sendable {
    /// The limits and policies of a cache.
    public struct Configuration: Sendable {
        /// The most bytes (headers and payloads on disk) the cache keeps; least recently used
        /// records go first when a write exceeds it. Default 256 MiB.
        public var sizeLimit: Int
        /// The most records the cache keeps. Default 100,000.
        public var countLimit: Int
        /// The largest record (header and payload) that may be stored; larger writes fail with
        /// ``CacheError/recordTooLarge(size:limit:)``. Default: the size limit.
        public var maximumRecordSize: Int?
        /// Where the time comes from (creation, last use, expiry). Default: the system clock.
        public var clock: CacheClock
        /// `true` to `fsync` each record and the folder before a write returns, so a record
        /// survives a power loss too. Default `false`: a process crash never leaves a damaged
        /// record either way, and a power loss can at worst leave a file the checksums reject.
        public var synchronizesWrites: Bool

        /// Creates a configuration.
        public init(
            sizeLimit: Int = 256 * 1024 * 1024,
            countLimit: Int = 100_000,
            maximumRecordSize: Int? = nil,
            clock: CacheClock = .system,
            synchronizesWrites: Bool = false
        ) {
            self.sizeLimit = sizeLimit
            self.countLimit = countLimit
            self.maximumRecordSize = maximumRecordSize
            self.clock = clock
            self.synchronizesWrites = synchronizesWrites
        }

        /// The record size limit in effect: the smaller of ``maximumRecordSize`` and ``sizeLimit``.
        var effectiveMaximumRecordSize: Int {
            min(maximumRecordSize ?? sizeLimit, sizeLimit)
        }
    }

    /// The longest key, in UTF-8 bytes.
    package static let maximumKeyLength = RecordFormat.maximumKeyLength
    /// The largest metadata, in bytes.
    package static let maximumMetadataLength = RecordFormat.maximumMetadataLength

    /// The folder the records live in.
    let directory: URL
    /// The limits and policies this cache was created with.
    let configuration: Configuration

    let folderPath: String
    let queue: DispatchQueue
    let state: Locked<State>
    let folderLock: FolderLock
    let eventSubject = PassthroughSubject<CacheEvent, Never>()

    struct State {
        var index = RecordIndex()
        /// How many times this instance ran ``DiskCache/removeAll()``: the local part of its
        /// ``CacheGeneration``.
        var removals: UInt64 = 0
    }

    /// The name of the lock file in the folder.
    static let lockFileName = ".lock"
    /// The prefix of temporary files in the folder.
    static let temporaryPrefix = ".tmp-"

    /// Opens (creating if needed) the cache in `directory` and indexes the records found there.
    ///
    /// Damaged files and temporary files left by interrupted writes are removed (before anyone
    /// can observe ``events``, so these removals are not reported). Files whose names the cache
    /// did not write are left alone.
    ///
    /// - Throws: ``CacheError`` if the folder cannot be created or listed. A read-only folder is
    ///   not an error: its records can be read; writes fail with
    ///   ``CacheError/folderNotWritable(path:errno:)``.
    public init(directory: URL, configuration: Configuration = Configuration()) throws {
        var path = directory.standardizedFileURL.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        self.directory = directory
        self.configuration = configuration
        folderPath = path
        queue = DispatchQueue(label: "TransitCache.DiskCache", qos: .utility, attributes: .concurrent)
        do {
            try FileSystem.makeFolder(path)
        } catch {
            throw CacheError.system("create folder", path: path, error: error)
        }
        FileSystem.restrictFolderToOwner(path, marker: DiskCache.lockFileName)
        folderLock = FolderLock(path: path + "/" + DiskCache.lockFileName)
        state = Locked(State())
        var report = GarbageCollectionReport()
        try rescan(report: &report)
    }

    /// Events: damaged files removed, records evicted or expired, failures absorbed. A hot
    /// signal: subscribers see what happens after they subscribe.
    public var events: Signal<CacheEvent, Never> {
        eventSubject.signal
    }

    /// Counts and sizes, as this instance knows them (`collectGarbage()` refreshes them from
    /// the folder).
    public var statistics: CacheStatistics {
        state.withLock { state in
            CacheStatistics(count: state.index.count, totalSize: state.index.totalSize, pinnedCount: state.index.pinnedCount)
        }
    }

    /// The keys of the records this instance knows, from least to most recently used.
    public var keys: [String] {
        state.withLock { state in state.index.entriesByUse.map(\.key) }
    }

    /// The keys this instance knows that `isIncluded` accepts, in no particular order.
    func knownKeys(where isIncluded: (String) -> Bool) -> [String] {
        state.withLock { state in state.index.keys(where: isIncluded) }
    }

    // MARK: - Reading

    /// The record stored under `key`, or `nil` if there is none, it expired, or its file was
    /// damaged (then the file is removed and a ``CacheEvent/corruptRecordRemoved(key:file:reason:)``
    /// event sent). Reading records the use, for least-recently-used eviction.
    ///
    /// - Parameters:
    ///   - key: the record's key.
    ///   - includingExpired: `true` to return a record whose TTL has passed (it is still there
    ///     until garbage collection removes it).
    /// - Throws: ``CacheError/keyTooLong(length:limit:)``, or a ``CacheError`` if the file exists
    ///   but cannot be read (permissions, I/O error).
    public func record(forKey key: String, includingExpired: Bool = false) throws -> CacheRecord? {
        guard let opened = try open(key, includingExpired: includingExpired, loadingPayload: true),
              let payload = opened.payload
        else { return nil }
        let fields = opened.header
        return CacheRecord(
            key: key,
            data: payload,
            metadata: Data(fields.metadata),
            createdAt: Date(cacheMilliseconds: fields.createdAt),
            lastUsedAt: Date(cacheMilliseconds: fields.lastUse),
            expiresAt: fields.expiresAt.map { Date(cacheMilliseconds: $0) },
            pinCount: Int(fields.pinCount)
        )
    }

    /// Opens the record stored under `key` for reading its payload in pieces: the header and the
    /// whole payload are verified first, the use is recorded, and the file stays open, so the
    /// record can be read even if it is replaced or removed meanwhile. A payload of at most
    /// `memoryLimit` bytes is read into memory in the same pass; a larger one is verified in
    /// bounded chunks and read again from the file as it is served.
    ///
    /// The record carries `generation` — by default the generation when this method is called,
    /// taken before the file is opened — so that new metadata for it
    /// (``replaceMetadata(of:with:)``) is dropped if ``removeAll()`` runs after that.
    func openRecord(
        forKey key: String,
        includingExpired: Bool = true,
        memoryLimit: Int = 4 << 20,
        generation: CacheGeneration? = nil
    ) throws -> OpenRecord? {
        try open(key, includingExpired: includingExpired, loadingPayloadUpTo: memoryLimit, generation: generation ?? self.generation())
    }

    private func open(_ key: String, includingExpired: Bool, loadingPayload: Bool) throws -> OpenRecord? {
        try open(key, includingExpired: includingExpired, loadingPayloadUpTo: loadingPayload ? .max : 0, generation: .none)
    }

    private func open(
        _ key: String, includingExpired: Bool, loadingPayloadUpTo memoryLimit: Int, generation: CacheGeneration
    ) throws -> OpenRecord? {
        try validate(key: key)
        let id = RecordID(key: key)
        let path = self.path(for: id)
        guard let (file, writable) = try openForReading(path, id: id) else { return nil }
        let header: RecordReading.Header
        var payload: Data?
        do {
            header = try RecordReading.header(of: file)
            guard header.header.key.elementsEqual(key.utf8) else { throw CacheEvent.CorruptionReason.keyMismatch }
            let now = configuration.clock.milliseconds
            if !includingExpired, let expiresAt = header.header.expiresAt, expiresAt <= now { return nil }
            if Int(header.header.payloadLength) <= memoryLimit || header.payload != nil {
                payload = try RecordReading.payload(of: file, header: header)
            } else {
                try RecordReading.verifyPayload(of: file, header: header)
            }
        } catch let reason as CacheEvent.CorruptionReason {
            discardCorrupt(path: path, file: file, id: id, key: key, reason: reason)
            return nil
        } catch {
            throw CacheError.system("read", path: path, error: error)
        }
        let now = configuration.clock.milliseconds
        if writable {
            do {
                try file.write(RecordFormat.usageSlot(lastUse: now), at: RecordFormat.usageSlotOffset)
            } catch {
                eventSubject.send(.housekeepingFailed(.system("record use", path: path, error: error)))
            }
        }
        let fields = header.header
        state.withLock { state in
            if state.index[id] != nil {
                state.index.touch(id, lastUse: now)
            } else {
                state.index.upsert(RecordIndex.Entry(
                    id: id, key: key, size: header.size, lastUse: now, expiresAt: fields.expiresAt, pinCount: fields.pinCount
                ))
            }
        }
        return OpenRecord(key: key, header: fields, file: file, payload: payload, folderPath: folderPath, generation: generation)
    }

    /// `true` if a fresh record is stored under `key`, checked as a read would (checksums
    /// included) but without recording a use.
    public func containsRecord(forKey key: String) throws -> Bool {
        try validate(key: key)
        let id = RecordID(key: key)
        let path = self.path(for: id)
        let file: SystemFile
        do {
            file = try SystemFile(path: path, flags: O_RDONLY)
        } catch {
            if errorCode(error) == ENOENT { return false }
            throw CacheError.system("read", path: path, error: error)
        }
        do {
            let header = try RecordReading.header(of: file)
            guard header.header.key.elementsEqual(key.utf8) else { throw CacheEvent.CorruptionReason.keyMismatch }
            if let expiresAt = header.header.expiresAt, expiresAt <= configuration.clock.milliseconds { return false }
            _ = try RecordReading.payload(of: file, header: header)
            return true
        } catch let reason as CacheEvent.CorruptionReason {
            discardCorrupt(path: path, file: file, id: id, key: key, reason: reason)
            return false
        } catch let error as SystemError {
            throw CacheError.system("read", path: path, error: error)
        }
    }

    // MARK: - Helpers

    /// The generation now (see ``CacheGeneration``): a write takes it when it starts and commits
    /// only if it is still the same, read again under the folder lock.
    func generation() -> CacheGeneration {
        CacheGeneration(folder: folderLock.generation(), local: state.withLock { $0.removals })
    }

    func path(for id: RecordID) -> String {
        folderPath + "/" + id.fileName
    }

    func send(_ event: CacheEvent) {
        eventSubject.send(event)
    }

    func validate(key: String) throws {
        let length = key.utf8.count
        guard length <= DiskCache.maximumKeyLength else {
            throw CacheError.keyTooLong(length: length, limit: DiskCache.maximumKeyLength)
        }
    }

    /// Opens a record file for a read: read-write, so the use can be recorded, or read-only on a
    /// read-only folder. `nil` if there is no such file.
    func openForReading(_ path: String, id: RecordID) throws -> (SystemFile, writable: Bool)? {
        do {
            return (try SystemFile(path: path, flags: O_RDWR), true)
        } catch {
            switch errorCode(error) {
            case ENOENT:
                state.withLock { state in _ = state.index.remove(id) }
                return nil
            case EACCES, EROFS, EPERM:
                do {
                    return (try SystemFile(path: path, flags: O_RDONLY), false)
                } catch {
                    if errorCode(error) == ENOENT { return nil }
                    throw CacheError.system("read", path: path, error: error)
                }
            default:
                throw CacheError.system("read", path: path, error: error)
            }
        }
    }

    /// Removes a damaged file — if the path still names the file that was read (another
    /// instance may have replaced it with a good record meanwhile) — and reports it.
    func discardCorrupt(path: String, file: SystemFile, id: RecordID, key: String?, reason: CacheEvent.CorruptionReason) {
        let identity = try? file.identity()
        let failure = folderLock.withLock { () -> CacheError? in
            guard let identity, FileIdentity.of(path: path) == identity else { return nil }
            do throws {
                try FileSystem.remove(path)
            } catch {
                return .system("remove", path: folderPath, error: error)
            }
            state.withLock { state in _ = state.index.remove(id) }
            return nil
        }
        eventSubject.send(.corruptRecordRemoved(key: key, file: id.fileName, reason: reason))
        if let failure { eventSubject.send(.housekeepingFailed(failure)) }
    }
}
