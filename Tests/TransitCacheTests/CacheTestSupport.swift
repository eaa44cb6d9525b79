import Foundation
import Signals
import Testing
@testable import TransitCache

/// A fresh folder under the system's temporary folder, removed with everything in it when the
/// value goes away.
final class TemporaryFolder: Sendable {
    let url: URL

    init() throws {
        url = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("TransitCacheTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    var path: String { url.path }

    /// The names in the folder, sorted.
    func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// The names of record files in the folder, sorted.
    func recordFiles() throws -> [String] {
        try names().filter { $0.hasSuffix(RecordID.suffix) }
    }

    /// The names of temporary files in the folder.
    func temporaryFiles() throws -> [String] {
        try names().filter { $0.hasPrefix(DiskCache.temporaryPrefix) }
    }

    /// The path of the file that holds `key`'s record.
    func recordPath(_ key: String) -> String {
        url.appendingPathComponent(RecordID(key: key).fileName).path
    }
}

/// Collects a cache's events.
final class EventLog: Sendable {
    private let recorded = Mutex<[CacheEvent]>([])
    private let token: CancellationToken

    init(_ cache: DiskCache) {
        let recorded = self.recorded
        token = cache.events.sink { event in recorded.withLock { $0.append(event) } }
    }

    var events: [CacheEvent] { recorded.withLock { $0 } }

    /// The reasons of the corruption events so far.
    var corruptions: [CacheEvent.CorruptionReason] {
        events.compactMap { event in
            if case let .corruptRecordRemoved(_, _, reason) = event { return reason }
            return nil
        }
    }

    /// The keys removed for `reason`, in order.
    func removed(_ reason: CacheEvent.RemovalReason) -> [String] {
        events.compactMap { event in
            if case let .recordRemoved(key, removedReason) = event, removedReason == reason { return key }
            return nil
        }
    }
}

/// A cache configuration whose clock follows `scheduler`'s virtual time.
func virtualConfiguration(
    _ scheduler: TestScheduler,
    sizeLimit: Int = 64 * 1024 * 1024,
    countLimit: Int = 100_000,
    maximumRecordSize: Int? = nil
) -> DiskCache.Configuration {
    DiskCache.Configuration(
        sizeLimit: sizeLimit, countLimit: countLimit, maximumRecordSize: maximumRecordSize,
        clock: .following(scheduler, from: Date(timeIntervalSince1970: 1_800_000_000))
    )
}

/// Bytes that differ from record to record.
func payload(_ seed: Int, count: Int = 100) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 17) })
}

/// Reads the whole file at `path`.
func fileBytes(_ path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Replaces the file at `path` with `bytes` (in place, as a disk error or another program would).
func overwrite(_ path: String, with bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}
