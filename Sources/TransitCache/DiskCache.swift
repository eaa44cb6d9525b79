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
///   Each instance keeps its own index; ``collectGarbage()`` re-synchronises it with the folder.
///
/// The synchronous methods block the calling thread on file I/O. Each has an `async` twin, and
/// ``signals`` offers them as cold signals; both run the work on the cache's own queue.
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
    public static let maximumKeyLength = 16 * 1024
    /// The largest metadata, in bytes.
    public static let maximumMetadataLength = 1024 * 1024

    /// The folder the records live in.
    public let directory: URL
    /// The limits and policies this cache was created with.
    public let configuration: Configuration

    let folderPath: String
    let queue: DispatchQueue
    private let state: Mutex<State>
    private let folderLock: FolderLock
    private let eventSubject = PassthroughSubject<CacheEvent, Never>()

    private struct State {
        var index = RecordIndex()
        /// Raised by ``DiskCache/removeAll()``: a writer that started before it does not commit.
        var generation: UInt64 = 0
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
        folderLock = FolderLock(path: path + "/" + DiskCache.lockFileName)
        state = Mutex(State())
        var report = GarbageCollectionReport()
        try rescan(report: &report)
    }

    /// Events: damaged files removed, records evicted or expired, failures absorbed. A hot
    /// signal: subscribers see what happens after they subscribe.
    public var events: Signal<CacheEvent, Never> {
        eventSubject.signal
    }

    /// Counts and sizes, as this instance knows them (``collectGarbage()`` refreshes them from
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

    // MARK: - Reading

    /// The record stored under `key`, or `nil` if there is none, it expired, or its file was
    /// damaged (then the file is removed and a ``CacheEvent/corruptRecordRemoved(key:file:reason:)``
    /// event sent). Reading records the use, for least-recently-used eviction.
    ///
    /// - Parameter includingExpired: `true` to return a record whose TTL has passed (it is
    ///   still there until garbage collection removes it).
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
            ttl: fields.ttl > 0 ? .milliseconds(fields.ttl) : nil,
            pinCount: Int(fields.pinCount)
        )
    }

    /// Opens the record stored under `key` for reading its payload in pieces: the header and the
    /// whole payload are verified first, the use is recorded, and the file stays open, so the
    /// record can be read even if it is replaced or removed meanwhile. A payload of at most
    /// `memoryLimit` bytes is read into memory in the same pass; a larger one is verified in
    /// bounded chunks and read again from the file as it is served.
    func openRecord(forKey key: String, includingExpired: Bool = true, memoryLimit: Int = 4 << 20) throws -> OpenRecord? {
        try open(key, includingExpired: includingExpired, loadingPayloadUpTo: memoryLimit)
    }

    /// Stores `metadata` as the metadata of the record `record` was opened from, keeping its
    /// payload: a new file (written and renamed into place like any record) whose payload is
    /// copied from the open file by the kernel where it can (`sendfile`), with the payload's
    /// checksum carried over. An HTTP revalidation (304) updates a large response this way.
    func replaceMetadata(of record: OpenRecord, with metadata: Data) throws {
        guard metadata.count <= DiskCache.maximumMetadataLength else {
            throw CacheError.metadataTooLarge(length: metadata.count, limit: DiskCache.maximumMetadataLength)
        }
        let generation = state.withLock { $0.generation }
        let now = configuration.clock.milliseconds
        var header = record.header
        header.metadata = Array(metadata)
        header.createdAt = now
        header.lastUse = now
        header.pinCount = 0
        let limit = configuration.effectiveMaximumRecordSize
        guard header.fileLength <= limit else { throw CacheError.recordTooLarge(size: header.fileLength, limit: limit) }
        let (temporaryPath, file) = try makeTemporaryFile()
        do {
            do {
                try file.write(header.encoded(), at: 0)
                try record.copyPayload(to: file, at: header.headerLength)
            } catch {
                throw CacheError.system("write", path: folderPath, error: error)
            }
            if try !commit(temporaryPath: temporaryPath, file: file, id: RecordID(key: record.key), header: header, generation: generation) {
                try? FileSystem.remove(temporaryPath)
            }
        } catch {
            try? FileSystem.remove(temporaryPath)
            throw error
        }
    }

    private func open(_ key: String, includingExpired: Bool, loadingPayload: Bool) throws -> OpenRecord? {
        try open(key, includingExpired: includingExpired, loadingPayloadUpTo: loadingPayload ? .max : 0)
    }

    private func open(_ key: String, includingExpired: Bool, loadingPayloadUpTo memoryLimit: Int) throws -> OpenRecord? {
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
        return OpenRecord(key: key, header: fields, file: file, payload: payload, folderPath: folderPath)
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

    // MARK: - Writing

    /// Stores `data` under `key`, replacing any record stored there (a replaced record's pins
    /// carry over to the new one).
    ///
    /// The record is complete on disk when the method returns, or absent if it throws. Storing
    /// may evict least recently used records to meet the limits.
    ///
    /// - Parameters:
    ///   - ttl: how long the record is fresh; `nil` (the default) for a record that never
    ///     expires.
    ///   - metadata: bytes stored with the record and returned with it (at most
    ///     ``maximumMetadataLength``).
    /// - Throws: ``CacheError`` — the key, metadata, TTL or size is out of bounds, or the folder
    ///   is read-only or full.
    public func store(_ data: Data, forKey key: String, ttl: Duration? = nil, metadata: Data = Data()) throws {
        var (header, generation) = try prepareHeader(forKey: key, ttl: ttl, metadata: metadata, expectedSize: data.count)
        header.payloadLength = UInt64(data.count)
        header.payloadCRC = CRC32C.checksum(data)
        let (temporaryPath, file) = try makeTemporaryFile()
        do {
            do {
                // The whole file in one write when it is small; header, then payload, when not.
                var bytes = header.encoded()
                if data.count <= 256 * 1024 {
                    bytes.append(contentsOf: data)
                    try file.write(bytes, at: 0)
                } else {
                    try file.write(bytes, at: 0)
                    try data.withUnsafeBytes { try file.write($0, at: header.headerLength) }
                }
            } catch {
                throw CacheError.system("write", path: folderPath, error: error)
            }
            if try !commit(temporaryPath: temporaryPath, file: file, id: RecordID(key: key), header: header, generation: generation) {
                try? FileSystem.remove(temporaryPath)
            }
        } catch {
            try? FileSystem.remove(temporaryPath)
            throw error
        }
    }

    /// A writer that streams a record to disk: append the payload in chunks, then commit. Use it
    /// for payloads that should not be held in memory at once (a download).
    ///
    /// Nothing is visible under `key` until ``RecordWriter/commit()``; a writer that is
    /// discarded, or released without committing, leaves no trace.
    ///
    /// - Throws: ``CacheError`` for an invalid key, metadata or TTL, or if the temporary file
    ///   cannot be created (a read-only folder).
    public func makeWriter(forKey key: String, ttl: Duration? = nil, metadata: Data = Data()) throws -> RecordWriter {
        try makeWriter(forKey: key, ttl: ttl, metadata: metadata, expectedSize: nil)
    }

    private func makeWriter(forKey key: String, ttl: Duration?, metadata: Data, expectedSize: Int?) throws -> RecordWriter {
        let (header, generation) = try prepareHeader(forKey: key, ttl: ttl, metadata: metadata, expectedSize: expectedSize)
        return try RecordWriter(
            cache: self, id: RecordID(key: key), header: header, generation: generation,
            sizeLimit: configuration.effectiveMaximumRecordSize
        )
    }

    /// Checks a write's key, metadata, TTL and (if known) size, and makes its header (payload
    /// length and CRC still zero); returns it with the generation the write belongs to.
    private func prepareHeader(forKey key: String, ttl: Duration?, metadata: Data, expectedSize: Int?) throws -> (RecordHeader, UInt64) {
        try validate(key: key)
        guard metadata.count <= DiskCache.maximumMetadataLength else {
            throw CacheError.metadataTooLarge(length: metadata.count, limit: DiskCache.maximumMetadataLength)
        }
        var ttlMilliseconds: Int64 = 0
        if let ttl {
            guard ttl > .zero else { throw CacheError.invalidTTL(ttl) }
            ttlMilliseconds = ttl.cacheMilliseconds
        }
        let now = configuration.clock.milliseconds
        let header = RecordHeader(
            key: Array(key.utf8), metadata: Array(metadata), payloadLength: 0, payloadCRC: 0,
            createdAt: now, ttl: ttlMilliseconds, lastUse: now, pinCount: 0
        )
        let limit = configuration.effectiveMaximumRecordSize
        if let expectedSize, header.headerLength + expectedSize > limit {
            throw CacheError.recordTooLarge(size: header.headerLength + expectedSize, limit: limit)
        }
        return (header, state.withLock { $0.generation })
    }

    /// Moves a complete temporary file into place, under the folder lock. Called by
    /// ``RecordWriter/commit()``.
    ///
    /// - Returns: `false` if ``removeAll()`` ran since the writer started: the record is dropped
    ///   and the caller removes the temporary file.
    func commit(temporaryPath: String, file: SystemFile, id: RecordID, header: RecordHeader, generation: UInt64) throws -> Bool {
        let path = self.path(for: id)
        let committed = try folderLock.withLock { () throws -> Bool in
            guard state.withLock({ $0.generation }) == generation else { return false }
            var pinCount: UInt32 = 0
            if let old = try? SystemFile(path: path, flags: O_RDONLY),
               let fixed = try? RecordReading.fixedHeader(of: old), fixed.pinCount > 0 {
                pinCount = fixed.pinCount
                do throws {
                    try file.write(RecordFormat.pinSlot(pinCount: pinCount), at: RecordFormat.pinSlotOffset)
                } catch {
                    throw CacheError.system("write", path: folderPath, error: error)
                }
            }
            if configuration.synchronizesWrites {
                do { try file.synchronize() } catch { throw CacheError.system("write", path: folderPath, error: error) }
            }
            do {
                try FileSystem.rename(temporaryPath, to: path)
            } catch {
                throw CacheError.system("rename", path: folderPath, error: error)
            }
            if configuration.synchronizesWrites {
                try? FileSystem.synchronizeFolder(folderPath)
            }
            let entry = RecordIndex.Entry(
                id: id, key: String(decoding: header.key, as: UTF8.self), size: header.fileLength,
                lastUse: header.lastUse, expiresAt: header.expiresAt, pinCount: pinCount
            )
            state.withLock { state in state.index.upsert(entry) }
            return true
        }
        guard committed else { return false }
        var report = GarbageCollectionReport()
        enforceLimits(report: &report)
        return true
    }

    /// Creates a temporary file for a writer; the caller must remove it if it does not commit.
    ///
    /// Created and locked under the folder lock, which scans hold too: a scan never sees a
    /// writer's file before the writer holds its lock (it would take it for a dead writer's).
    func makeTemporaryFile() throws -> (path: String, file: SystemFile) {
        try folderLock.withLock { () throws -> (path: String, file: SystemFile) in try createTemporaryFile() }
    }

    private func createTemporaryFile() throws -> (path: String, file: SystemFile) {
        var attempts = 0
        while true {
            let path = folderPath + "/" + DiskCache.temporaryPrefix + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            do {
                let file = try SystemFile(path: path, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
                // Held until the file is closed: a scan that can take this lock knows the
                // writer is gone (crashed) and removes the file.
                _ = try? file.lock(exclusive: true, wait: false)
                return (path, file)
            } catch {
                attempts += 1
                if errorCode(error) == EEXIST, attempts < 8 { continue }
                throw CacheError.system("create temporary file", path: folderPath, error: error)
            }
        }
    }

    // MARK: - Removing

    /// Removes the record stored under `key`, pinned or not. Removing a missing record does
    /// nothing.
    ///
    /// - Throws: a ``CacheError`` if the file cannot be removed (a read-only folder).
    public func removeRecord(forKey key: String) throws {
        try validate(key: key)
        let id = RecordID(key: key)
        let path = self.path(for: id)
        try folderLock.withLock { () throws -> Void in
            do throws {
                try FileSystem.remove(path)
            } catch {
                throw CacheError.system("remove", path: folderPath, error: error)
            }
            state.withLock { state in _ = state.index.remove(id) }
        }
    }

    /// Removes every record, pinned or not (a user signed out). A write in progress when this is
    /// called does not commit.
    ///
    /// - Throws: a ``CacheError`` if a file cannot be removed; the records removed before it
    ///   stay removed.
    public func removeAll() throws {
        try folderLock.withLock { () throws -> Void in
            state.withLock { state in state.generation += 1 }
            let names: [String]
            do throws {
                names = try FileSystem.names(in: folderPath)
            } catch {
                throw CacheError.system("list folder", path: folderPath, error: error)
            }
            for name in names {
                guard let id = RecordID(fileName: name) else { continue }
                do {
                    try FileSystem.remove(folderPath + "/" + name)
                } catch {
                    throw CacheError.system("remove", path: folderPath, error: error)
                }
                state.withLock { state in _ = state.index.remove(id) }
            }
            state.withLock { state in state.index = RecordIndex() }
        }
    }

    // MARK: - Pinning

    /// Pins the record stored under `key` once more: a pinned record is never evicted or
    /// removed by garbage collection (it still expires for reads). Pins are counted: a record
    /// pinned twice needs two ``unpin(_:)`` calls.
    ///
    /// - Returns: the new pin count.
    /// - Throws: ``CacheError/recordNotFound(key:)`` if no fresh record is stored under `key`.
    @discardableResult
    public func pin(_ key: String) throws -> Int {
        try updatePinCount(key) { count in
            count == .max ? count : count + 1
        }
    }

    /// Removes one pin from the record stored under `key`.
    ///
    /// - Returns: the new pin count (0 when the record is no longer pinned).
    /// - Throws: ``CacheError/recordNotPinned(key:)`` if it was not pinned,
    ///   ``CacheError/recordNotFound(key:)`` if there is no such record.
    @discardableResult
    public func unpin(_ key: String) throws -> Int {
        try updatePinCount(key) { count in
            guard count > 0 else { throw CacheError.recordNotPinned(key: key) }
            return count - 1
        }
    }

    private func updatePinCount(_ key: String, _ change: (UInt32) throws -> UInt32) throws -> Int {
        try validate(key: key)
        let id = RecordID(key: key)
        let path = self.path(for: id)
        var corruption: CacheEvent.CorruptionReason?
        let result = try folderLock.withLock { () throws -> Int in
            let file: SystemFile
            do throws {
                file = try SystemFile(path: path, flags: O_RDWR)
            } catch {
                if errorCode(error) == ENOENT {
                    state.withLock { state in _ = state.index.remove(id) }
                    throw CacheError.recordNotFound(key: key)
                }
                throw CacheError.system("pin", path: folderPath, error: error)
            }
            let header: RecordReading.Header
            do {
                header = try RecordReading.header(of: file)
                guard header.header.key.elementsEqual(key.utf8) else { throw CacheEvent.CorruptionReason.keyMismatch }
            } catch let reason as CacheEvent.CorruptionReason {
                corruption = reason
                try? FileSystem.remove(path)
                state.withLock { state in _ = state.index.remove(id) }
                throw CacheError.recordNotFound(key: key)
            } catch let error as SystemError {
                throw CacheError.system("pin", path: folderPath, error: error)
            }
            let count = try change(header.header.pinCount)
            do {
                try file.write(RecordFormat.pinSlot(pinCount: count), at: RecordFormat.pinSlotOffset)
            } catch {
                throw CacheError.system("pin", path: folderPath, error: error)
            }
            let fields = header.header
            state.withLock { state in
                if state.index[id] != nil {
                    state.index.setPinCount(id, count)
                } else {
                    state.index.upsert(RecordIndex.Entry(
                        id: id, key: key, size: header.size, lastUse: fields.lastUse, expiresAt: fields.expiresAt, pinCount: count
                    ))
                }
            }
            return Int(count)
        }
        if let corruption {
            eventSubject.send(.corruptRecordRemoved(key: key, file: id.fileName, reason: corruption))
        }
        return result
    }

    // MARK: - Garbage collection

    /// Re-reads the folder (records written, used, pinned or removed by other instances, damaged
    /// files, temporary files of dead writers), removes expired records that are not pinned, and
    /// evicts least recently used records until the cache is within its limits.
    ///
    /// - Throws: a ``CacheError`` if the folder cannot be listed. Failures to remove single
    ///   files are reported on ``events`` instead.
    @discardableResult
    public func collectGarbage() throws -> GarbageCollectionReport {
        var report = GarbageCollectionReport()
        try rescan(report: &report)
        removeExpired(report: &report)
        enforceLimits(report: &report)
        return report
    }

    /// Runs ``collectGarbage()`` every `interval` on `scheduler`, until the returned token is
    /// cancelled or released. Failures are reported on ``events``.
    public func scheduleGarbageCollection(every interval: Duration, on scheduler: any Scheduler) -> CancellationToken {
        let timer = RepeatingAction(interval: interval, scheduler: scheduler) { [weak self] in
            guard let self else { return }
            do {
                try self.collectGarbage()
            } catch let error as CacheError {
                self.eventSubject.send(.housekeepingFailed(error))
            } catch {}
        }
        timer.start()
        return CancellationToken { timer.cancel() }
    }

    /// Rebuilds the index from the folder, under the folder lock (commits wait; reads do not).
    private func rescan(report: inout GarbageCollectionReport) throws {
        var events: [CacheEvent] = []
        defer { for event in events { eventSubject.send(event) } }
        try folderLock.withLock { () throws -> Void in
            let names: [String]
            do throws {
                names = try FileSystem.names(in: folderPath)
            } catch {
                throw CacheError.system("list folder", path: folderPath, error: error)
            }
            var scanned: [RecordIndex.Entry] = []
            for name in names {
                let path = folderPath + "/" + name
                if name.hasPrefix(DiskCache.temporaryPrefix) {
                    if removeIfOrphaned(path) {
                        report.orphansRemoved += 1
                        events.append(.orphanedTemporaryFileRemoved(file: name))
                    }
                    continue
                }
                guard let id = RecordID(fileName: name) else { continue }
                guard let file = try? SystemFile(path: path, flags: O_RDONLY) else { continue }
                do {
                    let header = try RecordReading.header(of: file)
                    let key = String(decoding: header.header.key, as: UTF8.self)
                    guard RecordID(key: key) == id else { throw CacheEvent.CorruptionReason.keyMismatch }
                    scanned.append(RecordIndex.Entry(
                        id: id, key: key, size: header.size, lastUse: header.header.lastUse,
                        expiresAt: header.header.expiresAt, pinCount: header.header.pinCount
                    ))
                } catch let reason as CacheEvent.CorruptionReason {
                    let size = (try? file.size()) ?? 0
                    do {
                        try FileSystem.remove(path)
                        report.corruptRemoved += 1
                        report.bytesFreed += size
                        events.append(.corruptRecordRemoved(key: nil, file: name, reason: reason))
                    } catch {
                        events.append(.housekeepingFailed(.system("remove", path: folderPath, error: error)))
                    }
                } catch {
                    continue
                }
            }
            state.withLock { state in
                // Uses this instance saw but the files do not show yet keep their rank.
                let old = state.index
                var rank: [RecordID: Int] = [:]
                for (position, entry) in old.entriesByUse.enumerated() { rank[entry.id] = position }
                for position in scanned.indices {
                    if let known = old[scanned[position].id] {
                        scanned[position].lastUse = max(scanned[position].lastUse, known.lastUse)
                    }
                }
                scanned.sort { lhs, rhs in
                    if lhs.lastUse != rhs.lastUse { return lhs.lastUse < rhs.lastUse }
                    return (rank[lhs.id] ?? -1) < (rank[rhs.id] ?? -1)
                }
                var index = RecordIndex()
                for entry in scanned { index.upsert(entry) }
                state.index = index
            }
        }
    }

    /// Removes `path` if no writer holds its lock (the writer died); `true` if it did.
    private func removeIfOrphaned(_ path: String) -> Bool {
        guard let file = try? SystemFile(path: path, flags: O_RDONLY),
              (try? file.lock(exclusive: true, wait: false)) == true
        else { return false }
        return (try? FileSystem.remove(path)) != nil
    }

    /// Removes expired records that are not pinned, re-checking each file under the folder lock.
    private func removeExpired(report: inout GarbageCollectionReport) {
        let now = configuration.clock.milliseconds
        let candidates = state.withLock { state in
            state.index.entriesByUse.filter { entry in
                entry.pinCount == 0 && (entry.expiresAt.map { $0 <= now } ?? false)
            }
        }
        for candidate in candidates {
            let path = self.path(for: candidate.id)
            let outcome = folderLock.withLock { () -> CacheEvent? in
                guard let file = try? SystemFile(path: path, flags: O_RDONLY) else {
                    state.withLock { state in _ = state.index.remove(candidate.id) }
                    return nil
                }
                guard let fixed = try? RecordReading.fixedHeader(of: file) else { return nil }
                guard fixed.pinCount == 0, let expiresAt = fixed.expiresAt, expiresAt <= now else {
                    if fixed.pinCount > 0 { state.withLock { state in state.index.setPinCount(candidate.id, fixed.pinCount) } }
                    return nil
                }
                do throws {
                    try FileSystem.remove(path)
                } catch {
                    return .housekeepingFailed(.system("remove", path: folderPath, error: error))
                }
                let removed = state.withLock { state in state.index.remove(candidate.id) }
                report.expiredRemoved += 1
                report.bytesFreed += removed?.size ?? fixed.fileLength
                return .recordRemoved(key: candidate.key, reason: .expired)
            }
            if let outcome { eventSubject.send(outcome) }
        }
    }

    /// Evicts least recently used records that are not pinned until the cache is within its
    /// limits. Each candidate's file is re-read under the folder lock first: a record another
    /// instance used since this one indexed it moves to the most recent end instead.
    private func enforceLimits(report: inout GarbageCollectionReport) {
        let sizeLimit = configuration.sizeLimit
        let countLimit = configuration.countLimit
        var spared = Set<RecordID>()
        while true {
            enum Next { case done, unreachable(size: Int, count: Int), candidate(RecordIndex.Entry, CacheEvent.RemovalReason) }
            let next = state.withLock { state -> Next in
                let overCount = state.index.count > countLimit
                let overSize = state.index.totalSize > sizeLimit
                guard overCount || overSize else { return .done }
                guard let entry = state.index.leastRecentlyUsedUnpinned(excluding: spared) else {
                    return .unreachable(size: state.index.totalSize, count: state.index.count)
                }
                return .candidate(entry, overSize ? .sizeLimit : .countLimit)
            }
            guard case let .candidate(candidate, reason) = next else {
                if case let .unreachable(size, count) = next { eventSubject.send(.limitsUnreachable(size: size, count: count)) }
                return
            }
            let path = self.path(for: candidate.id)
            let outcome = folderLock.withLock { () -> CacheEvent? in
                let file: SystemFile
                do {
                    file = try SystemFile(path: path, flags: O_RDONLY)
                } catch {
                    state.withLock { state in _ = state.index.remove(candidate.id) }
                    return nil
                }
                let fixed: RecordHeader.Fixed
                do {
                    fixed = try RecordReading.fixedHeader(of: file)
                } catch let reason as CacheEvent.CorruptionReason {
                    try? FileSystem.remove(path)
                    state.withLock { state in _ = state.index.remove(candidate.id) }
                    report.corruptRemoved += 1
                    return .corruptRecordRemoved(key: nil, file: candidate.id.fileName, reason: reason)
                } catch {
                    spared.insert(candidate.id)
                    return nil
                }
                if fixed.pinCount > 0 {
                    state.withLock { state in state.index.setPinCount(candidate.id, fixed.pinCount) }
                    return nil
                }
                if fixed.lastUse > candidate.lastUse {
                    spared.insert(candidate.id)
                    state.withLock { state in state.index.touch(candidate.id, lastUse: fixed.lastUse) }
                    return nil
                }
                do throws {
                    try FileSystem.remove(path)
                } catch {
                    spared.insert(candidate.id)
                    return .housekeepingFailed(.system("remove", path: folderPath, error: error))
                }
                let removed = state.withLock { state in state.index.remove(candidate.id) }
                report.evicted += 1
                report.bytesFreed += removed?.size ?? fixed.fileLength
                return .recordRemoved(key: candidate.key, reason: reason)
            }
            if let outcome { eventSubject.send(outcome) }
        }
    }

    // MARK: - Helpers

    func path(for id: RecordID) -> String {
        folderPath + "/" + id.fileName
    }

    func send(_ event: CacheEvent) {
        eventSubject.send(event)
    }

    private func validate(key: String) throws {
        let length = key.utf8.count
        guard length <= DiskCache.maximumKeyLength else {
            throw CacheError.keyTooLong(length: length, limit: DiskCache.maximumKeyLength)
        }
    }

    /// Opens a record file for a read: read-write, so the use can be recorded, or read-only on a
    /// read-only folder. `nil` if there is no such file.
    private func openForReading(_ path: String, id: RecordID) throws -> (SystemFile, writable: Bool)? {
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
    private func discardCorrupt(path: String, file: SystemFile, id: RecordID, key: String?, reason: CacheEvent.CorruptionReason) {
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

/// The folder lock: a lock between the threads of this instance, then an exclusive `flock` on
/// the folder's lock file, between instances and processes. Commits, pins, removals and scans
/// hold it; reads do not.
///
/// If the lock file cannot be opened (a read-only folder, where nothing can change anyway),
/// only the in-process lock is taken.
final class FolderLock: Sendable {
    private let file: SystemFile?
    /// Guards the number of times the lock was taken. Not `Void`: a zero-sized value would share
    /// its address with the lock itself, which the thread sanitizer then reports as a race.
    private let mutex = Mutex<UInt64>(0)

    init(path: String) {
        if let file = try? SystemFile(path: path, flags: O_RDWR | O_CREAT, mode: 0o644) {
            self.file = file
        } else {
            file = try? SystemFile(path: path, flags: O_RDONLY)
        }
    }

    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { acquisitions throws(E) -> R in
            acquisitions &+= 1
            let locked = (try? file?.lock(exclusive: true, wait: true)) ?? false
            defer { if locked { file?.unlock() } }
            return try body()
        }
    }
}
