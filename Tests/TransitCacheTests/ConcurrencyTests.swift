import Foundation
import Signals
import Testing
@testable import TransitCache

/// A payload that names its key and version, so a reader can tell a record from another's.
private func stamped(_ key: String, _ version: Int) -> Data {
    var data = Data("\(key)|\(version)|".utf8)
    data.append(payload(version, count: 200 + (version % 7) * 300))
    return data
}

/// `true` if `data` is exactly what ``stamped(_:_:)`` wrote for `key` (some version).
private func isStamped(_ data: Data, for key: String) -> Bool {
    let text = String(decoding: data.prefix(64), as: UTF8.self)
    let parts = text.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0] == key, let version = Int(parts[1]) else { return false }
    return data == stamped(key, version)
}

@Suite("DiskCache: many threads, several instances on one folder")
struct ConcurrencyTests {
    @Test("many threads storing, reading, pinning and removing overlapping keys: every read is a whole record of its key")
    func manyThreads() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: .init(countLimit: 12))
        let log = EventLog(cache)
        let keys = (0..<16).map { "key-\($0)" }
        let wrongReads = Mutex(0)
        let unexpectedErrors = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for step in 0..<150 {
                let key = keys[(thread * 7 + step * 3) % keys.count]
                do {
                    switch step % 6 {
                    case 0, 1: try cache.store(stamped(key, thread * 1000 + step), forKey: key)
                    case 2, 3:
                        if let record = try cache.record(forKey: key), !isStamped(record.data, for: key) {
                            wrongReads.withLock { $0 += 1 }
                        }
                    case 4:
                        if (try? cache.pin(key)) != nil { _ = try? cache.unpin(key) }
                    default:
                        if step % 12 == 5 { try cache.removeRecord(forKey: key) } else { try cache.collectGarbage() }
                    }
                } catch {
                    unexpectedErrors.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(wrongReads.withLock { $0 } == 0)
        #expect(unexpectedErrors.withLock { $0 } == [])
        #expect(log.corruptions.isEmpty)
        try cache.collectGarbage()
        #expect(cache.statistics.count <= 12)
        #expect(cache.statistics.count == (try folder.recordFiles().count))
        #expect(try folder.temporaryFiles().isEmpty)
        for key in cache.keys {
            let record = try #require(try cache.record(forKey: key))
            #expect(isStamped(record.data, for: key))
        }
    }

    @Test("two instances on one folder, both writing and reading from many threads: no damaged file, no wrong read")
    func twoInstancesConcurrently() throws {
        let folder = try TemporaryFolder()
        let first = try DiskCache(directory: folder.url, configuration: .init(countLimit: 10))
        let second = try DiskCache(directory: folder.url, configuration: .init(countLimit: 10))
        let firstLog = EventLog(first)
        let secondLog = EventLog(second)
        let keys = (0..<14).map { "shared-\($0)" }
        let wrongReads = Mutex(0)
        let unexpectedErrors = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            let cache = thread.isMultiple(of: 2) ? first : second
            for step in 0..<120 {
                let key = keys[(thread * 5 + step) % keys.count]
                do {
                    switch step % 4 {
                    case 0: try cache.store(stamped(key, thread * 1000 + step), forKey: key)
                    case 3 where step % 24 == 3: try cache.collectGarbage()
                    default:
                        if let record = try cache.record(forKey: key), !isStamped(record.data, for: key) {
                            wrongReads.withLock { $0 += 1 }
                        }
                    }
                } catch {
                    unexpectedErrors.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(wrongReads.withLock { $0 } == 0)
        #expect(unexpectedErrors.withLock { $0 } == [])
        #expect(firstLog.corruptions.isEmpty)
        #expect(secondLog.corruptions.isEmpty)
        let third = try DiskCache(directory: folder.url, configuration: .init(countLimit: 10))
        let thirdLog = EventLog(third)
        try third.collectGarbage()
        #expect(thirdLog.corruptions.isEmpty)
        #expect(try folder.temporaryFiles().isEmpty)
        #expect(try folder.recordFiles().count <= 10)
        for key in third.keys {
            #expect(isStamped(try #require(try third.record(forKey: key)).data, for: key))
        }
    }

    @Test("one instance sees what another stored, removed and pinned")
    func twoInstancesShareRecords() throws {
        let folder = try TemporaryFolder()
        let first = try DiskCache(directory: folder.url)
        let second = try DiskCache(directory: folder.url)
        try first.store(payload(1), forKey: "a")
        #expect(try second.record(forKey: "a")?.data == payload(1))
        try second.store(payload(2), forKey: "a")
        #expect(try first.record(forKey: "a")?.data == payload(2))
        #expect(try second.pin("a") == 1)
        #expect(try first.pin("a") == 2)
        #expect(try first.record(forKey: "a")?.pinCount == 2)
        try second.removeRecord(forKey: "a")
        #expect(try first.record(forKey: "a") == nil)
        #expect(first.statistics.count == 0)
    }

    @Test("eviction by one instance spares a record another instance pinned or used since")
    func evictionRechecksTheFile() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let evicting = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 3))
        let log = EventLog(evicting)
        for key in ["pinned-elsewhere", "used-elsewhere", "old", "newer"] where key != "newer" {
            try evicting.store(payload(1), forKey: key)
            scheduler.advance(by: .seconds(1))
        }
        // The other instance pins the least recently used record and reads the next one.
        let other = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 3))
        try other.pin("pinned-elsewhere")
        scheduler.advance(by: .seconds(1))
        _ = try other.record(forKey: "used-elsewhere")
        scheduler.advance(by: .seconds(1))
        // The evicting instance still believes both are its least recently used records.
        #expect(evicting.keys == ["pinned-elsewhere", "used-elsewhere", "old"])
        try evicting.store(payload(2), forKey: "newer")
        #expect(log.removed(.countLimit) == ["old"])
        #expect(try other.record(forKey: "pinned-elsewhere") != nil)
        #expect(try other.record(forKey: "used-elsewhere") != nil)
        #expect(evicting.statistics.pinnedCount == 1)
    }

    @Test("garbage collection picks up records another instance wrote, and forgets ones it removed")
    func garbageCollectionResynchronises() throws {
        let folder = try TemporaryFolder()
        let first = try DiskCache(directory: folder.url)
        let second = try DiskCache(directory: folder.url)
        try second.store(payload(1), forKey: "from-second")
        try first.store(payload(2), forKey: "from-first")
        #expect(first.keys == ["from-first"])
        try second.removeRecord(forKey: "from-second")
        try second.store(payload(3), forKey: "again")
        try first.collectGarbage()
        #expect(Set(first.keys) == ["from-first", "again"])
        #expect(first.statistics.totalSize == 2 * RecordFormat.fixedHeaderSize + "from-first".utf8.count + "again".utf8.count + 200)
    }
}
