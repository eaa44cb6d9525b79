import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Pins: counted, stored in the record file, updated under the folder lock.
extension DiskCache {
    /// Pins the record stored under `key` once more: a pinned record is never evicted or
    /// removed by garbage collection (it still expires for reads). Pins are counted: a record
    /// pinned twice needs two `unpin(_:)` calls.
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
}
