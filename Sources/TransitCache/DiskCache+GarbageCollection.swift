import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Garbage collection: re-reading the folder, removing expired records, evicting the least
// recently used ones beyond the limits; on demand or on a scheduler.
extension DiskCache {
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

    /// Runs `collectGarbage()` every `interval` on `scheduler`, until the returned token is
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
    func rescan(report: inout GarbageCollectionReport) throws {
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
                    file.restrictToOwner()
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
    func enforceLimits(report: inout GarbageCollectionReport) {
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
}
