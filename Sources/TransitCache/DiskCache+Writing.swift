import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Storing records: whole, streamed through a RecordWriter, or with new metadata; the commit
// (rename under the folder lock) they share.
extension DiskCache {
    /// Stores `data` under `key`, replacing any record stored there (a replaced record's pins
    /// carry over to the new one).
    ///
    /// The record is complete on disk when the method returns, or absent if it throws. Storing
    /// may evict least recently used records to meet the limits.
    ///
    /// - Parameters:
    ///   - data: the record's payload.
    ///   - key: the record's key (any string up to the key limit; it is hashed to a file name).
    ///   - ttl: how long the record is fresh; `nil` (the default) for a record that never
    ///     expires.
    ///   - metadata: bytes stored with the record and returned with it (at most
    ///     1 MiB).
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

    /// A writer whose record commits only if the cache's generation is still `generation` (by
    /// default, the generation now): an HTTP exchange passes the generation it took when it
    /// looked the request up.
    func makeWriter(
        forKey key: String, ttl: Duration?, metadata: Data, expectedSize: Int?, generation: CacheGeneration? = nil
    ) throws -> RecordWriter {
        let (header, current) = try prepareHeader(forKey: key, ttl: ttl, metadata: metadata, expectedSize: expectedSize)
        let generation = generation ?? current
        return try RecordWriter(
            cache: self, id: RecordID(key: key), header: header, generation: generation,
            sizeLimit: configuration.effectiveMaximumRecordSize
        )
    }

    /// Checks a write's key, metadata, TTL and (if known) size, and makes its header (payload
    /// length and CRC still zero); returns it with the generation the write belongs to.
    private func prepareHeader(forKey key: String, ttl: Duration?, metadata: Data, expectedSize: Int?) throws -> (RecordHeader, CacheGeneration) {
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
        return (header, generation())
    }

    /// Moves a complete temporary file into place, under the folder lock. Called by
    /// ``RecordWriter/commit()``.
    ///
    /// - Returns: `false` if ``removeAll()`` ran since the writer started (the generation, read
    ///   again under the lock, is not `generation`): the record is dropped and the caller removes
    ///   the temporary file.
    func commit(temporaryPath: String, file: SystemFile, id: RecordID, header: RecordHeader, generation: CacheGeneration) throws -> Bool {
        let path = self.path(for: id)
        let committed = try folderLock.withLock { () throws -> Bool in
            let current = self.generation()
            if current.folder == nil {
                // Damaged bytes in the lock file: nothing that started before can be trusted to
                // have seen the last removeAll(). A new generation lets later writes commit.
                try? advanceGeneration()
                return false
            }
            guard generation.admits(current) else { return false }
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

    /// Creates a temporary file (see ``makeTemporaryFile()``); call it with the folder lock held.
    func createTemporaryFile(mode: mode_t = 0o600) throws -> (path: String, file: SystemFile) {
        var attempts = 0
        while true {
            let path = folderPath + "/" + DiskCache.temporaryPrefix + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            do {
                let file = try SystemFile(path: path, flags: O_RDWR | O_CREAT | O_EXCL, mode: mode)
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


    /// Stores `metadata` as the metadata of the record `record` was opened from, keeping its
    /// payload: a new file (written and renamed into place like any record) whose payload is
    /// copied from the open file by the kernel where it can (`sendfile`), with the payload's
    /// checksum carried over. An HTTP revalidation (304) updates a large response this way.
    ///
    /// Nothing is stored if ``removeAll()`` ran since the record was opened (its
    /// ``OpenRecord/generation``): a removed record never comes back from a file still open.
    func replaceMetadata(of record: OpenRecord, with metadata: Data) throws {
        guard metadata.count <= DiskCache.maximumMetadataLength else {
            throw CacheError.metadataTooLarge(length: metadata.count, limit: DiskCache.maximumMetadataLength)
        }
        let generation = record.generation
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
}
