import Foundation
import Signals

/// Streams one record into a ``DiskCache``: ``append(_:)`` the payload in chunks, then
/// ``commit()``. Made by ``DiskCache/makeWriter(forKey:ttl:metadata:)``.
///
/// The payload goes to a temporary file in the cache folder as it arrives (memory stays bounded
/// by the chunk size), with its checksum computed on the way; ``commit()`` writes the final
/// header and renames the file into place. Until then nothing is visible under the key, and a
/// writer that is discarded, released, or whose process dies leaves no record behind.
///
/// Thread safety: the methods may be called from any thread; calls are serialised.
public final class RecordWriter: Sendable {
    private struct State {
        var file: SystemFile?
        var written = 0
        var crc = CRC32C()
    }

    private let cache: DiskCache
    private let id: RecordID
    private let header: RecordHeader
    private let generation: CacheGeneration
    private let sizeLimit: Int
    private let temporaryPath: String
    private let state: Locked<State>

    init(cache: DiskCache, id: RecordID, header: RecordHeader, generation: CacheGeneration, sizeLimit: Int) throws {
        self.cache = cache
        self.id = id
        self.header = header
        self.generation = generation
        self.sizeLimit = sizeLimit
        let (path, file) = try cache.makeTemporaryFile()
        temporaryPath = path
        state = Locked(State(file: file))
        do {
            // A placeholder header (payload length and CRC 0) reserves the space; commit rewrites it.
            try file.write(header.encoded(), at: 0)
        } catch {
            discard()
            throw CacheError.system("write", path: cache.folderPath, error: error)
        }
    }

    deinit {
        discard()
    }

    /// The key the record will be stored under.
    var key: String { String(decoding: header.key, as: UTF8.self) }

    /// Payload bytes appended so far.
    var payloadSize: Int { state.withLock { $0.written } }

    /// Appends `chunk` to the payload.
    ///
    /// - Throws: ``CacheError/recordTooLarge(size:limit:)`` when the record outgrows the
    ///   cache's maximum record size, or a ``CacheError`` if the volume is full; the writer is
    ///   then discarded. ``CacheError/writerClosed`` after a commit or discard.
    public func append(_ chunk: Data) throws {
        try state.withLock { state throws -> Void in
            guard let file = state.file else { throw CacheError.writerClosed }
            let size = header.headerLength + state.written + chunk.count
            guard size <= sizeLimit else {
                close(&state)
                throw CacheError.recordTooLarge(size: size, limit: sizeLimit)
            }
            do {
                try chunk.withUnsafeBytes { buffer throws in
                    try file.write(buffer, at: header.headerLength + state.written)
                }
            } catch {
                close(&state)
                throw CacheError.system("write", path: cache.folderPath, error: error)
            }
            state.crc.update(chunk)
            state.written += chunk.count
        }
    }

    /// Writes the final header and moves the record into place: from now on reads return it.
    /// A record stored under the same key before is replaced (its pins carry over). May evict
    /// least recently used records to meet the cache's limits.
    ///
    /// If `removeAll()` ran since the writer was made — on this instance, another
    /// instance on the folder, or in another process — the record is dropped instead (a
    /// signed-out user's response must not come back). That is checked under the folder lock,
    /// so a `removeAll()` either comes after the commit (and removes the record) or wins.
    ///
    /// - Throws: a ``CacheError`` if the header or the rename fails (the writer is discarded);
    ///   ``CacheError/writerClosed`` if already committed or discarded.
    public func commit() throws {
        try state.withLock { state throws -> Void in
            guard let file = state.file else { throw CacheError.writerClosed }
            defer { close(&state) }
            var final = header
            final.payloadLength = UInt64(state.written)
            final.payloadCRC = state.crc.value
            do {
                try file.write(final.encoded(), at: 0)
            } catch {
                throw CacheError.system("write", path: cache.folderPath, error: error)
            }
            if try cache.commit(temporaryPath: temporaryPath, file: file, id: id, header: final, generation: generation) {
                state.file = nil  // renamed: nothing to remove
            }
        }
    }

    /// Drops the record: removes the temporary file. Does nothing after a commit.
    public func discard() {
        state.withLock { state in close(&state) }
    }

    /// Closes the file and removes the temporary file if it is still there (not committed).
    private func close(_ state: inout State) {
        guard state.file != nil else { return }
        state.file = nil
        try? FileSystem.remove(temporaryPath)
    }
}
