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

    /// Removes every record, pinned or not (a user signed out).
    ///
    /// A write in progress when this is called does not commit — whether it is on this instance,
    /// on another instance on the folder, or in another process: the folder's generation, which
    /// every write reads when it starts and again under the folder lock when it commits, changes.
    ///
    /// - Throws: a ``CacheError`` if a file cannot be removed (the records removed before it
    ///   stay removed), or if the generation cannot be written to the lock file (then writes in
    ///   progress on other instances may still commit; this instance's do not).
    public func removeAll() throws {
        try folderLock.withLock { () throws -> Void in
            // The generation changes last, even when a removal fails: a write that reads the new
            // generation without the lock finds no record from before (an HTTP exchange could
            // otherwise open one about to be removed and store it again after a 304).
            defer {
                state.withLock { state in state.removals &+= 1 }
            }
            do {
                try removeRecordFiles()
            } catch {
                try? advanceGeneration()
                throw error
            }
            try advanceGeneration()
            state.withLock { state in state.index = RecordIndex() }
        }
    }

    /// Removes every record file. Call it with the folder lock held.
    private func removeRecordFiles() throws {
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
    }

    /// Writes the folder's next generation to the lock file (a damaged one is replaced by a
    /// random value). Call it with the folder lock held.
    func advanceGeneration() throws {
        let next = (folderLock.generation() ?? UInt64.random(in: 0...UInt64.max)) &+ 1
        do {
            try folderLock.setGeneration(next)
        } catch {
            throw CacheError.system("write the generation", path: folderPath, error: error)
        }
    }
}
