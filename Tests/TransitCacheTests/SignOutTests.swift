import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitCache
import TransitTesting

// Sign-out (`removeAll()`) wins over every exchange and write that began before it, on this
// instance, on another instance on the folder, and in another process.
//
// The requests here carry no credential the cache can see (cookies added below it, by the
// session's cookie storage, are the usual case): only `removeAll()` keeps the users apart.

@Suite("HTTP caching: sign-out wins over exchanges in flight")
struct HTTPCacheSignOutTests {
    @Test("a response in flight when removeAll runs is delivered but not stored; the next user's request goes to the server")
    func responseInFlight() async throws {
        let fixture = try HTTPCacheFixture()
        let stub = StubTransport(scheduler: fixture.scheduler)
        let transport = stub.caching(in: fixture.cache)
        stub.stub(.get, path: "/me")
            .thenRespond(StubResponse.text("user A", headers: ["Cache-Control": "private, max-age=600"]).delayed(by: .seconds(1)))
            .thenRespond(.text("user B", headers: ["Cache-Control": "private, max-age=600"]))
        let first = SignalRecorder(transport.send(fixture.request("/me")))
        fixture.records.queue.sync(flags: .barrier) {}
        #expect(stub.requests.count == 1)
        try fixture.cache.removeAll()
        fixture.scheduler.advance(by: .seconds(1))
        #expect(first.values.map(\.text) == ["user A"])
        #expect(first.isFinished)
        #expect(try fixture.folder.recordFiles().isEmpty)
        #expect(try fixture.folder.temporaryFiles().isEmpty)
        let second = try await transport.send(fixture.request("/me")).firstValue()
        #expect(second.text == "user B")
        #expect(stub.requests.count == 2)
    }

    @Test("a 304 that arrives after removeAll serves the caller but does not bring the removed response back")
    func revalidationInFlight() async throws {
        let fixture = try HTTPCacheFixture()
        let stub = StubTransport(scheduler: fixture.scheduler)
        let transport = stub.caching(in: fixture.cache)
        stub.stub(.get, path: "/feed")
            .thenRespond(.text("A's feed", headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""]))
            .thenRespond(StubResponse.status(304, headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\""]).delayed(by: .seconds(1)))
            .thenRespond(.text("B's feed", headers: ["Cache-Control": "max-age=600", "ETag": "\"v2\""]))
        _ = try await transport.send(fixture.request("/feed")).firstValue()
        fixture.scheduler.advance(by: .seconds(11))
        let revalidating = SignalRecorder(transport.send(fixture.request("/feed")))
        fixture.records.queue.sync(flags: .barrier) {}
        #expect(stub.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        try fixture.cache.removeAll()
        fixture.scheduler.advance(by: .seconds(1))
        #expect(revalidating.values.map(\.text) == ["A's feed"])
        #expect(try fixture.folder.recordFiles().isEmpty)
        #expect(try fixture.folder.temporaryFiles().isEmpty)
        let next = try await transport.send(fixture.request("/feed")).firstValue()
        #expect(next.text == "B's feed")
        #expect(stub.requests.count == 3)
        #expect(stub.requests.last?.value(forHTTPHeaderField: "If-None-Match") == nil)
    }

    @Test("removeAll on another HTTPCache on the folder stops a response in flight on this one from being stored")
    func responseInFlightOtherInstance() async throws {
        let fixture = try HTTPCacheFixture()
        let other = try HTTPCache(records: DiskCache(directory: fixture.folder.url, configuration: .init(
            clock: .following(fixture.scheduler, from: HTTPCacheFixture.origin)
        )))
        let stub = StubTransport(scheduler: fixture.scheduler)
        let transport = stub.caching(in: fixture.cache)
        stub.stub(.get, path: "/me")
            .thenRespond(StubResponse.text("user A", headers: ["Cache-Control": "private, max-age=600"]).delayed(by: .seconds(1)))
            .thenRespond(.text("user B", headers: ["Cache-Control": "private, max-age=600"]))
        let first = SignalRecorder(transport.send(fixture.request("/me")))
        fixture.records.queue.sync(flags: .barrier) {}
        try other.removeAll()
        fixture.scheduler.advance(by: .seconds(1))
        #expect(first.values.map(\.text) == ["user A"])
        #expect(try fixture.folder.recordFiles().isEmpty)
        #expect(try await transport.send(fixture.request("/me")).firstValue().text == "user B")
        #expect(try await stub.caching(in: other).send(fixture.request("/me")).firstValue().text == "user B")
        #expect(stub.requests.count == 2)
    }

    @Test("an exchange that looks up after a removeAll on another instance stores its response as usual")
    func exchangeAfterOtherInstanceRemoveAll() async throws {
        let fixture = try HTTPCacheFixture()
        let other = try HTTPCache(records: DiskCache(directory: fixture.folder.url))
        fixture.stub.stub(.get, path: "/me").thenRespond(.text("me", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await fixture.send("/me")
        try other.removeAll()
        try other.removeAll()
        _ = try await fixture.send("/me")
        _ = try await fixture.send("/me")
        #expect(fixture.networkRequests == 2)
        #expect(fixture.events.suffix(3) == [.miss(fixture.url("/me")), .stored(fixture.url("/me")), .hit(fixture.url("/me"))])
    }
}

@Suite("DiskCache: removeAll wins over writes in progress everywhere")
struct DiskCacheSignOutTests {
    @Test("a write in progress on one instance does not commit after removeAll on another instance")
    func writerOtherInstance() throws {
        let folder = try TemporaryFolder()
        let writing = try DiskCache(directory: folder.url)
        let removing = try DiskCache(directory: folder.url)
        let writer = try writing.makeWriter(forKey: "private")
        try writer.append(payload(1))
        try removing.removeAll()
        try writer.commit()
        #expect(try writing.record(forKey: "private") == nil)
        #expect(try removing.record(forKey: "private") == nil)
        #expect(try folder.recordFiles().isEmpty)
        #expect(try folder.temporaryFiles().isEmpty)
        // Writes that start after it commit, on both instances.
        try writing.store(payload(2), forKey: "after")
        let later = try removing.makeWriter(forKey: "later")
        try later.append(payload(3))
        try later.commit()
        #expect(try removing.record(forKey: "after")?.data == payload(2))
        #expect(try writing.record(forKey: "later")?.data == payload(3))
    }

    @Test("new metadata for a record opened before removeAll on another instance does not bring it back")
    func replaceMetadataOtherInstance() throws {
        let folder = try TemporaryFolder()
        let writing = try DiskCache(directory: folder.url)
        let removing = try DiskCache(directory: folder.url)
        try writing.store(payload(1), forKey: "private", metadata: Data("old".utf8))
        let opened = try #require(try writing.openRecord(forKey: "private"))
        try removing.removeAll()
        try writing.replaceMetadata(of: opened, with: Data("new".utf8))
        #expect(try writing.record(forKey: "private") == nil)
        #expect(try folder.recordFiles().isEmpty)
        #expect(try folder.temporaryFiles().isEmpty)
    }

    @Test("damaged bytes in the lock file's generation: the write in progress is dropped, and the next write commits")
    func damagedGeneration() throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        try cache.removeAll()
        let lockPath = folder.url.appendingPathComponent(DiskCache.lockFileName).path
        #expect(try fileBytes(lockPath).count == GenerationFormat.size)
        let writer = try cache.makeWriter(forKey: "private")
        var bytes = try fileBytes(lockPath)
        bytes[6] ^= 0x01
        try overwrite(lockPath, with: bytes)
        try writer.commit()
        #expect(try cache.record(forKey: "private") == nil)
        try cache.store(payload(1), forKey: "next")
        #expect(try cache.record(forKey: "next")?.data == payload(1))
        #expect(try folder.temporaryFiles().isEmpty)
    }

    @Test("a write in progress in this process does not commit after removeAll in another process")
    func writerOtherProcess() throws {
        let child = try #require(ChildProcess.executable, "TransitCacheChild is not built next to the test bundle")
        let folder = try TemporaryFolder()
        let cache = try DiskCache(directory: folder.url)
        let writer = try cache.makeWriter(forKey: "private")
        try writer.append(payload(1))
        let process = try ChildProcess(child, ["remove-all", folder.path])
        #expect(process.readToEnd() == ["removed"])
        #expect(process.waitForExit() == .exited(0))
        try writer.commit()
        #expect(try cache.record(forKey: "private") == nil)
        #expect(try folder.recordFiles().isEmpty)
        try cache.store(payload(2), forKey: "after")
        #expect(try cache.record(forKey: "after")?.data == payload(2))
    }
}
