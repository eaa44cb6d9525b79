import Foundation
import Signals
import Testing
@testable import TransitCache

/// Blocks the cache's queue until released, so a test can act while no cache work can run.
private final class QueueGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let entered = DispatchSemaphore(value: 0)

    init(_ cache: DiskCache) {
        cache.queue.async(flags: .barrier) { [semaphore, entered] in
            entered.signal()
            semaphore.wait()
        }
        entered.wait()
    }

    func open() { semaphore.signal() }
}

@Suite("DiskCache: async/await and signals")
struct AsyncAndSignalTests {
    @Test("every operation runs from async code through perform")
    func asyncAPI() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(TestScheduler()))
        try await cache.perform { try $0.store(payload(1), forKey: "a", ttl: .seconds(60), metadata: Data("m".utf8)) }
        let record = try #require(try await cache.perform { try $0.record(forKey: "a") })
        #expect(record.data == payload(1))
        #expect(record.metadata == Data("m".utf8))
        #expect(try await cache.perform { try $0.containsRecord(forKey: "a") })
        #expect(try await cache.perform { try $0.pin("a") } == 1)
        #expect(try await cache.perform { try $0.unpin("a") } == 0)
        let report = try await cache.perform { try $0.collectGarbage() }
        #expect(report == GarbageCollectionReport())
        try await cache.perform { try $0.removeRecord(forKey: "a") }
        #expect(try await cache.perform { try $0.record(forKey: "a") } == nil)
        try await cache.perform { try $0.store(payload(2), forKey: "b") }
        try await cache.perform { try $0.removeAll() }
        #expect(try await !cache.perform { try $0.containsRecord(forKey: "b") })
        await #expect(throws: CacheError.recordNotFound(key: "none")) { try await cache.perform { try $0.pin("none") } }
    }

    @Test("a cancelled task does not start the work")
    func asyncCancelled() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await cache.perform { try $0.store(payload(1), forKey: "a") }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await !cache.perform { try $0.containsRecord(forKey: "a") })
    }

    @Test("a task cancelled while its work waits for the cache's queue does not run it")
    func asyncCancelledWhileQueued() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let gate = QueueGate(cache)
        // `store(_:forKey:)` is this call; the hook tells when its work waits behind the gate.
        let (queued, continuation) = AsyncStream<Void>.makeStream()
        let task = Task {
            try await cache.perform(whenQueued: { continuation.yield() }) { try cache.store(payload(1), forKey: "a") }
        }
        var waiting = queued.makeAsyncIterator()
        _ = await waiting.next()
        task.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await !cache.perform { try $0.containsRecord(forKey: "a") })
    }

    @Test("the signals are cold: nothing happens until subscribed, and every subscription runs again")
    func signalsAreCold() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let store = Signal(operation: { try await cache.perform { try $0.store(payload(1), forKey: "a") } })
        let pin = Signal(operation: { try await cache.perform { try $0.pin("a") } })
        #expect(try await !cache.perform { try $0.containsRecord(forKey: "a") })
        try await store.firstValue()
        #expect(try await cache.perform { try $0.record(forKey: "a") }?.data == payload(1))
        #expect(try await pin.firstValue() == 1)
        #expect(try await pin.firstValue() == 2)
        #expect(try await Signal(operation: { try await cache.perform { try $0.unpin("a") } }).firstValue() == 1)
        #expect(try await Signal(operation: { try await cache.perform { try $0.record(forKey: "a") } }).firstValue()?.data == payload(1))
        #expect(try await Signal(operation: { try await cache.perform { try $0.containsRecord(forKey: "a") } }).firstValue())
        #expect(try await Signal(operation: { try await cache.perform { try $0.collectGarbage() } }).firstValue() == GarbageCollectionReport())
        try await Signal(operation: { try await cache.perform { try $0.removeRecord(forKey: "a") } }).firstValue()
        #expect(try await Signal(operation: { try await cache.perform { try $0.record(forKey: "a") } }).firstValue() == nil)
        try await Signal(operation: { try await cache.perform { try $0.store(payload(2), forKey: "b") } }).firstValue()
        try await Signal(operation: { try await cache.perform { try $0.removeAll() } }).firstValue()
        #expect(cache.keys.isEmpty)
    }

    @Test("a signal sends its result and finishes, or fails with the CacheError")
    func signalEvents() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        var values: [CacheRecord?] = []
        for try await value in Signal(operation: { try await cache.perform { try $0.record(forKey: "missing") } }).values { values.append(value) }
        #expect(values == [nil])
        await #expect(throws: CacheError.recordNotFound(key: "missing")) {
            try await Signal(operation: { try await cache.perform { try $0.pin("missing") } }).firstValue()
        }
    }

    @Test("cancelling a subscription before the cache's queue runs it keeps the work from running")
    func signalCancelledBeforeWork() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let gate = QueueGate(cache)
        let delivered = Locked(0)
        let token = Signal(operation: { try await cache.perform { try $0.store(payload(1), forKey: "a") } }).sink(
            receiveCompletion: { _ in delivered.withLock { $0 += 1 } },
            receiveValue: { _ in delivered.withLock { $0 += 1 } }
        )
        token.cancel()
        gate.open()
        cache.queue.sync(flags: .barrier) {}
        #expect(try !cache.containsRecord(forKey: "a"))
        #expect(delivered.withLock { $0 } == 0)
    }
}

@Suite("Signal.cached(in:key:ttl:)")
struct CachedSignalTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var visits: Int
    }

    /// A signal that counts its subscriptions and sends the given profiles.
    final class Upstream: Sendable {
        private let count = Locked(0)
        let profiles: [Profile]
        let failure: (any Error)?

        init(_ profiles: [Profile], failure: (any Error)? = nil) {
            self.profiles = profiles
            self.failure = failure
        }

        var subscriptions: Int { count.withLock { $0 } }

        var signal: Signal<Profile, any Error> {
            Signal { [self] observer in
                count.withLock { $0 += 1 }
                for profile in profiles { observer.send(profile) }
                if let failure { observer.fail(failure) } else { observer.finish() }
                return nil
            }
        }
    }

    @Test("a miss subscribes upstream and stores the value; the next subscription is served from the cache")
    func missThenHit() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(TestScheduler()))
        let upstream = Upstream([Profile(name: "ada", visits: 1)])
        let cached = upstream.signal.cached(in: cache, key: "profile", ttl: .seconds(60))
        #expect(try await cached.firstValue() == Profile(name: "ada", visits: 1))
        #expect(upstream.subscriptions == 1)
        #expect(try await cached.firstValue() == Profile(name: "ada", visits: 1))
        var all: [Profile] = []
        for try await profile in cached.values { all.append(profile) }
        #expect(all == [Profile(name: "ada", visits: 1)])
        #expect(upstream.subscriptions == 1)
        let stored = try #require(try await cache.perform { try $0.record(forKey: "profile") })
        #expect(try JSONDecoder().decode(Profile.self, from: stored.data) == Profile(name: "ada", visits: 1))
        #expect(stored.expiresAt?.timeIntervalSince(stored.createdAt) == 60)
    }

    @Test("after the TTL (virtual time) the value is fetched and stored again")
    func expiry() async throws {
        let folder = try TemporaryFolder()
        let scheduler = TestScheduler()
        let cache = try DiskCache(directory: folder.url, configuration: virtualConfiguration(scheduler))
        let upstream = Upstream([Profile(name: "ada", visits: 1)])
        let cached = upstream.signal.cached(in: cache, key: "profile", ttl: .seconds(60))
        _ = try await cached.firstValue()
        scheduler.advance(by: .seconds(59))
        _ = try await cached.firstValue()
        #expect(upstream.subscriptions == 1)
        scheduler.advance(by: .seconds(1))
        _ = try await cached.firstValue()
        #expect(upstream.subscriptions == 2)
    }

    @Test("every value passes through and the last one stays; a failure passes through")
    func severalValuesAndFailure() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let upstream = Upstream([Profile(name: "a", visits: 1), Profile(name: "b", visits: 2)], failure: URLError(.timedOut))
        let cached = upstream.signal.cached(in: cache, key: "profile", ttl: nil)
        var received: [Profile] = []
        await #expect(throws: URLError(.timedOut)) {
            for try await profile in cached.values { received.append(profile) }
        }
        #expect(received == [Profile(name: "a", visits: 1), Profile(name: "b", visits: 2)])
        #expect(try await cached.firstValue() == Profile(name: "b", visits: 2))
        #expect(upstream.subscriptions == 1)
    }

    @Test("a record that does not decode is a miss: upstream is asked and the record replaced")
    func undecodable() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        try await cache.perform { try $0.store(Data("not json".utf8), forKey: "profile") }
        let upstream = Upstream([Profile(name: "ada", visits: 3)])
        let cached = upstream.signal.cached(in: cache, key: "profile", ttl: nil)
        #expect(try await cached.firstValue() == Profile(name: "ada", visits: 3))
        #expect(upstream.subscriptions == 1)
        #expect(try await cached.firstValue() == Profile(name: "ada", visits: 3))
        #expect(upstream.subscriptions == 1)
    }

    @Test("a value that cannot be stored still passes through, and the failure is reported")
    func storeFailure() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url, configuration: .init(maximumRecordSize: 100))
        let log = EventLog(cache)
        let upstream = Upstream([Profile(name: String(repeating: "x", count: 200), visits: 1)])
        let cached = upstream.signal.cached(in: cache, key: "profile", ttl: nil)
        #expect(try await cached.firstValue().visits == 1)
        #expect(try await cached.firstValue().visits == 1)
        #expect(upstream.subscriptions == 2)
        let failures = log.events.filter { if case .writeFailed(key: "profile", error: .recordTooLarge) = $0 { return true } else { return false } }
        #expect(failures.count == 2)
    }

    @Test("cancelling while the cache is read keeps upstream from being subscribed")
    func cancelledBeforeRead() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let upstream = Upstream([Profile(name: "ada", visits: 1)])
        let gate = QueueGate(cache)
        let token = upstream.signal.cached(in: cache, key: "profile", ttl: nil).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        token.cancel()
        gate.open()
        cache.queue.sync(flags: .barrier) {}
        #expect(upstream.subscriptions == 0)
        #expect(try !cache.containsRecord(forKey: "profile"))
    }
}
