import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Removing records on request: one, or all of them (a user signed out).
extension DiskCache {
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
}
