import Foundation
import Signals
import Testing
@testable import TransitCache

@Suite("DiskCache: records, TTL, pins, LRU")
struct DiskCacheTests {
    @Test("a stored record reads back with its metadata, creation time and TTL; a missing key is a miss")
    func storeAndRead() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        try cache.store(payload(1), forKey: "a", ttl: .seconds(60), metadata: Data("meta".utf8))
        let record = try #require(try cache.record(forKey: "a"))
        #expect(record.key == "a")
        #expect(record.data == payload(1))
        #expect(record.metadata == Data("meta".utf8))
        #expect(record.createdAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(record.expiresAt?.timeIntervalSince(record.createdAt) == 60)
        #expect(record.expiresAt == Date(timeIntervalSince1970: 1_800_000_060))
        #expect(record.pinCount == 0)
        #expect(try cache.record(forKey: "b") == nil)
        #expect(try cache.containsRecord(forKey: "a"))
        #expect(try !cache.containsRecord(forKey: "b"))
        #expect(try folder.recordFiles() == [RecordID(key: "a").fileName])
        #expect(try folder.temporaryFiles().isEmpty)
        #expect(cache.statistics.count == 1)
        #expect(cache.statistics.totalSize == RecordFormat.fixedHeaderSize + 1 + 4 + 100)
    }

    @Test("storing under a key again replaces the record; an empty payload and an empty key are fine")
    func replace() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        try cache.store(payload(1), forKey: "k")
        try cache.store(payload(2, count: 10_000), forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == payload(2, count: 10_000))
        try cache.store(Data(), forKey: "")
        #expect(try cache.record(forKey: "")?.data == Data())
        #expect(cache.statistics.count == 2)
        #expect(try folder.recordFiles().count == 2)
    }

    @Test("a large payload (beyond the first read) reads back intact")
    func largePayload() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let data = payload(3, count: 3 * 1024 * 1024 + 17)
        try cache.store(data, forKey: "big")
        #expect(try cache.record(forKey: "big")?.data == data)
    }

    @Test("keys never name a path outside the folder: every key becomes one hashed file inside it")
    func hostileKeys() throws {
        let parent = try TemporaryFolder()
        let folder = parent.url.appendingPathComponent("cache")
        let cache = try DiskCache(directory: folder)
        let keys = ["../escape", "../../../../tmp/escape", "/etc/passwd", "a/b/c", "..", ".", ".lock", "\0", "x\n", String(repeating: "../", count: 1000)]
        for (index, key) in keys.enumerated() {
            try cache.store(payload(index), forKey: key)
        }
        for (index, key) in keys.enumerated() {
            #expect(try cache.record(forKey: key)?.data == payload(index))
        }
        #expect(try parent.names() == ["cache"])
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.filter { $0.hasSuffix(RecordID.suffix) }.count == keys.count)
        #expect(Set(names).subtracting(keys.map { RecordID(key: $0).fileName }) == [DiskCache.lockFileName])
    }

    @Test("bad input fails with a clear error and stores nothing")
    func badInput() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: .init(sizeLimit: 10_000))
        let longKey = String(repeating: "k", count: DiskCache.maximumKeyLength + 1)
        #expect(throws: CacheError.keyTooLong(length: DiskCache.maximumKeyLength + 1, limit: DiskCache.maximumKeyLength)) {
            try cache.store(Data(), forKey: longKey)
        }
        #expect(throws: CacheError.keyTooLong(length: DiskCache.maximumKeyLength + 1, limit: DiskCache.maximumKeyLength)) {
            try cache.record(forKey: longKey)
        }
        #expect(throws: CacheError.metadataTooLarge(length: DiskCache.maximumMetadataLength + 1, limit: DiskCache.maximumMetadataLength)) {
            try cache.store(Data(), forKey: "k", metadata: Data(count: DiskCache.maximumMetadataLength + 1))
        }
        #expect(throws: CacheError.invalidTTL(.zero)) { try cache.store(Data(), forKey: "k", ttl: .zero) }
        #expect(throws: CacheError.invalidTTL(.seconds(-1))) { try cache.store(Data(), forKey: "k", ttl: .seconds(-1)) }
        #expect(throws: CacheError.recordTooLarge(size: RecordFormat.fixedHeaderSize + 1 + 10_000, limit: 10_000)) {
            try cache.store(Data(count: 10_000), forKey: "k")
        }
        #expect(try folder.recordFiles().isEmpty)
        #expect(try folder.temporaryFiles().isEmpty)
        let message = CacheError.recordTooLarge(size: 2, limit: 1).description
        #expect(message.contains("larger than the cache's maximum record size"))
    }

    @Test("a record expires after its TTL (in virtual time): a miss, unless expired records are asked for")
    func ttl() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        try cache.store(payload(1), forKey: "short", ttl: .seconds(30))
        try cache.store(payload(2), forKey: "forever")
        scheduler.advance(by: .seconds(29))
        #expect(try cache.record(forKey: "short")?.data == payload(1))
        scheduler.advance(by: .seconds(1))
        #expect(try cache.record(forKey: "short") == nil)
        #expect(try !cache.containsRecord(forKey: "short"))
        #expect(try cache.record(forKey: "short", includingExpired: true)?.data == payload(1))
        scheduler.advance(by: .seconds(86_400 * 365))
        #expect(try cache.record(forKey: "forever")?.data == payload(2))
    }

    @Test("garbage collection removes expired records, keeps pinned ones and fresh ones")
    func garbageCollection() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        let log = EventLog(cache)
        try cache.store(payload(1), forKey: "expires", ttl: .seconds(10))
        try cache.store(payload(2), forKey: "pinned", ttl: .seconds(10))
        try cache.store(payload(3), forKey: "fresh", ttl: .seconds(100))
        try cache.pin("pinned")
        scheduler.advance(by: .seconds(10))
        let report = try cache.collectGarbage()
        #expect(report.expiredRemoved == 1)
        #expect(report.bytesFreed == RecordFormat.fixedHeaderSize + "expires".utf8.count + 100)
        #expect(log.removed(.expired) == ["expires"])
        #expect(try cache.record(forKey: "expires", includingExpired: true) == nil)
        #expect(try cache.record(forKey: "pinned", includingExpired: true)?.data == payload(2))
        #expect(try cache.record(forKey: "fresh")?.data == payload(3))
        #expect(try folder.recordFiles().count == 2)
    }

    @Test("scheduled garbage collection runs on the scheduler's clock, and stops when its token is cancelled")
    func scheduledGarbageCollection() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        let log = EventLog(cache)
        try cache.store(payload(1), forKey: "a", ttl: .seconds(30))
        try cache.store(payload(2), forKey: "b", ttl: .seconds(90))
        let token = cache.scheduleGarbageCollection(every: .seconds(60), on: scheduler)
        scheduler.advance(by: .seconds(59))
        #expect(try folder.recordFiles().count == 2)
        scheduler.advance(by: .seconds(1))
        #expect(log.removed(.expired) == ["a"])
        #expect(try folder.recordFiles() == [RecordID(key: "b").fileName])
        scheduler.advance(by: .seconds(60))
        #expect(log.removed(.expired) == ["a", "b"])
        try cache.store(payload(3), forKey: "c", ttl: .seconds(1))
        token.cancel()
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(600))
        #expect(try folder.recordFiles() == [RecordID(key: "c").fileName])
    }

    @Test("releasing the token of scheduled garbage collection stops it; the timer does not keep the cache alive")
    func scheduledGarbageCollectionReleased() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        weak var weakCache: DiskCache?
        do {
            let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
            weakCache = cache
            var token: CancellationToken? = cache.scheduleGarbageCollection(every: .seconds(1), on: scheduler)
            scheduler.advance(by: .seconds(3))
            #expect(scheduler.pendingCount == 1)
            token = nil
            _ = token
            #expect(scheduler.pendingCount == 0)
            _ = cache.scheduleGarbageCollection(every: .seconds(1), on: scheduler)
        }
        #expect(weakCache == nil)
    }

    @Test("eviction is least recently USED: a record read recently survives one written recently")
    func leastRecentlyUsed() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 3))
        let log = EventLog(cache)
        for key in ["a", "b", "c"] {
            try cache.store(payload(1), forKey: key)
            scheduler.advance(by: .seconds(1))
        }
        _ = try cache.record(forKey: "a")   // written first, used last
        scheduler.advance(by: .seconds(1))
        try cache.store(payload(2), forKey: "d")
        #expect(log.removed(.countLimit) == ["b"])
        #expect(Set(cache.keys) == ["a", "c", "d"])
        #expect(cache.keys == ["c", "a", "d"])
        _ = try cache.record(forKey: "c")
        try cache.store(payload(3), forKey: "e")
        #expect(log.removed(.countLimit) == ["b", "a"])
        #expect(try folder.recordFiles().count == 3)
    }

    @Test("uses are recorded in the file: a new instance on the folder evicts in the same order, without any payload rewritten")
    func lastUsePersists() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        do {
            let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
            for key in ["a", "b", "c"] {
                try cache.store(payload(1, count: 5000), forKey: key)
                scheduler.advance(by: .seconds(1))
            }
            let before = try fileBytes(folder.recordPath("a"))
            let record = try #require(try cache.record(forKey: "a"))
            #expect(record.lastUsedAt == Date(timeIntervalSince1970: 1_800_000_000))
            let after = try fileBytes(folder.recordPath("a"))
            // Only the 16-byte usage slot changed.
            let changed = zip(before, after).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
            #expect(!changed.isEmpty)
            #expect(changed.allSatisfy { (RecordFormat.usageSlotOffset..<(RecordFormat.usageSlotOffset + RecordFormat.usageSlotSize)).contains($0) })
            #expect(before.count == after.count)
            scheduler.advance(by: .seconds(1))
            #expect(try cache.record(forKey: "a")?.lastUsedAt == Date(timeIntervalSince1970: 1_800_000_003))
        }
        let reopened = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 2))
        #expect(reopened.keys == ["b", "c", "a"])
        let report = try reopened.collectGarbage()
        #expect(report.evicted == 1)
        #expect(Set(reopened.keys) == ["c", "a"])
        #expect(try reopened.record(forKey: "b") == nil)
    }

    @Test("the size limit evicts least recently used records until the total fits")
    func sizeLimit() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let recordSize = RecordFormat.fixedHeaderSize + 1 + 1000
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, sizeLimit: recordSize * 4))
        let log = EventLog(cache)
        for key in ["a", "b", "c", "d"] {
            try cache.store(payload(1, count: 1000), forKey: key)
        }
        #expect(cache.statistics.totalSize == recordSize * 4)
        #expect(log.removed(.sizeLimit).isEmpty)
        _ = try cache.record(forKey: "a")
        try cache.store(payload(2, count: 2500), forKey: "e")   // needs room of 2.5 records
        #expect(log.removed(.sizeLimit) == ["b", "c", "d"])
        #expect(cache.statistics.totalSize <= recordSize * 4)
        #expect(Set(cache.keys) == ["a", "e"])
    }

    @Test("pinned records are never evicted; when only pinned records are left the limit is reported unreachable")
    func pinnedSurviveEviction() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 2))
        let log = EventLog(cache)
        try cache.store(payload(1), forKey: "a")
        try cache.store(payload(2), forKey: "b")
        #expect(try cache.pin("a") == 1)
        #expect(try cache.pin("b") == 1)
        try cache.store(payload(3), forKey: "c")
        #expect(log.removed(.countLimit) == ["c"])
        try cache.unpin("b")
        try cache.store(payload(4), forKey: "d")
        #expect(log.removed(.countLimit) == ["c", "b"])
        #expect(Set(cache.keys) == ["a", "d"])
        try cache.store(payload(5), forKey: "e")
        #expect(log.removed(.countLimit) == ["c", "b", "d"])
        try cache.pin("e")
        #expect(cache.statistics.pinnedCount == 2)
        let tighter = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler, countLimit: 1))
        let tighterLog = EventLog(tighter)
        let report = try tighter.collectGarbage()
        #expect(report.evicted == 0)
        #expect(tighterLog.events == [.limitsUnreachable(size: 2 * (RecordFormat.fixedHeaderSize + 1 + 100), count: 2)])
        #expect(try tighter.record(forKey: "a")?.data == payload(1))
        #expect(try tighter.record(forKey: "e")?.data == payload(5))
    }

    @Test("pins are counted, stored in the file (a relaunch keeps them), carried over when the record is replaced")
    func pinCounts() throws {
        let folder = try TemporaryFolder()
        do {
            let cache = try DiskCache(directory: folder.url)
            try cache.store(payload(1), forKey: "k")
            #expect(try cache.pin("k") == 1)
            #expect(try cache.pin("k") == 2)
            #expect(try cache.unpin("k") == 1)
            #expect(try cache.record(forKey: "k")?.pinCount == 1)
            try cache.store(payload(2), forKey: "k")
            #expect(try cache.record(forKey: "k")?.pinCount == 1)
        }
        let reopened = try DiskCache(directory: folder.url)
        #expect(reopened.statistics.pinnedCount == 1)
        #expect(try reopened.record(forKey: "k")?.isPinned == true)
        #expect(try reopened.unpin("k") == 0)
        #expect(throws: CacheError.recordNotPinned(key: "k")) { try reopened.unpin("k") }
        #expect(throws: CacheError.recordNotFound(key: "none")) { try reopened.pin("none") }
        #expect(reopened.statistics.pinnedCount == 0)
    }

    @Test("removing a record, and removing all (pinned too), deletes the files")
    func removal() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        try cache.store(payload(1), forKey: "a")
        try cache.store(payload(2), forKey: "b")
        try cache.store(payload(3), forKey: "c")
        try cache.pin("c")
        try cache.removeRecord(forKey: "a")
        try cache.removeRecord(forKey: "missing")
        #expect(try cache.record(forKey: "a") == nil)
        #expect(try folder.recordFiles().count == 2)
        try cache.removeAll()
        #expect(try folder.recordFiles().isEmpty)
        #expect(cache.statistics == CacheStatistics(count: 0, totalSize: 0, pinnedCount: 0))
        #expect(try folder.names() == [DiskCache.lockFileName])
    }

    @Test("a streamed record appears only on commit; a discarded or released writer leaves nothing")
    func writer() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(TestScheduler()))
        let writer = try cache.makeWriter(forKey: "stream", ttl: .seconds(60), metadata: Data("m".utf8))
        var expected = Data()
        for index in 0..<20 {
            let chunk = payload(index, count: 10_000)
            try writer.append(chunk)
            expected.append(chunk)
            #expect(try cache.record(forKey: "stream") == nil)
        }
        #expect(try folder.temporaryFiles().count == 1)
        try writer.commit()
        #expect(try cache.record(forKey: "stream")?.data == expected)
        #expect(try cache.record(forKey: "stream")?.metadata == Data("m".utf8))
        #expect(throws: CacheError.writerClosed) { try writer.append(Data()) }
        #expect(throws: CacheError.writerClosed) { try writer.commit() }

        let discarded = try cache.makeWriter(forKey: "discarded")
        try discarded.append(payload(1))
        discarded.discard()
        #expect(throws: CacheError.writerClosed) { try discarded.commit() }
        do {
            let released = try cache.makeWriter(forKey: "released")
            try released.append(payload(1))
        }
        #expect(try cache.record(forKey: "discarded") == nil)
        #expect(try cache.record(forKey: "released") == nil)
        #expect(try folder.temporaryFiles().isEmpty)
    }

    @Test("a streamed record that outgrows the maximum record size fails and leaves nothing")
    func writerTooLarge() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: .init(maximumRecordSize: 50_000))
        let writer = try cache.makeWriter(forKey: "big")
        try writer.append(Data(count: 40_000))
        #expect(throws: CacheError.recordTooLarge(size: RecordFormat.fixedHeaderSize + 3 + 60_000, limit: 50_000)) {
            try writer.append(Data(count: 20_000))
        }
        #expect(throws: CacheError.writerClosed) { try writer.commit() }
        #expect(try folder.temporaryFiles().isEmpty)
        #expect(try cache.record(forKey: "big") == nil)
    }

    @Test("a write that started before removeAll does not commit (a signed-out user's data stays gone)")
    func writerAfterRemoveAll() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let writer = try cache.makeWriter(forKey: "private")
        try writer.append(payload(1))
        try cache.removeAll()
        try writer.commit()
        #expect(try cache.record(forKey: "private") == nil)
        #expect(try folder.recordFiles().isEmpty)
        #expect(try folder.temporaryFiles().isEmpty)
    }

    @Test("replacing a record's metadata keeps its payload (copied file to file) and its pins; small and large payloads")
    func replaceMetadata() throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        for (key, size) in [("small", 1000), ("large", 6 * 1024 * 1024 + 3)] {
            let data = payload(size, count: size)
            try cache.store(data, forKey: key, metadata: Data("old".utf8))
            try cache.pin(key)
            let opened = try #require(try cache.openRecord(forKey: key, memoryLimit: 4 << 20))
            #expect((opened.payload != nil) == (size < 4 << 20))
            scheduler.advance(by: .seconds(5))
            try cache.replaceMetadata(of: opened, with: Data("new metadata".utf8))
            let record = try #require(try cache.record(forKey: key))
            #expect(record.metadata == Data("new metadata".utf8))
            #expect(record.data == data)
            #expect(record.pinCount == 1)
            #expect(record.createdAt == Date(timeIntervalSince1970: 1_800_000_000 + scheduler.now.timeInterval))
        }
        #expect(try folder.temporaryFiles().isEmpty)
        #expect(cache.statistics.count == 2)
    }
}
