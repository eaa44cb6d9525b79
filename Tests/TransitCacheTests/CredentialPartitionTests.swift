import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitCache
import TransitTesting

@Suite("HTTP caching: partitioned by credential")
struct HTTPCacheCredentialPartitionTests {
    @Test(
        "a response stored for one credential is served only to requests with the same one; another credential, or none, has its own entry",
        arguments: ["Authorization", "Cookie", "Proxy-Authorization", "X-Auth-Token", "X-API-Key", "x-session-id"]
    )
    func partitioned(header: String) async throws {
        let fixture = try HTTPCacheFixture()
        let headers = ["Cache-Control": "private, max-age=600"]
        fixture.stub.stub(.get, path: "/me")
            .thenRespond(.text("alice", headers: headers.merging(["Set-Cookie": "session=alice"]) { $1 }))
            .thenRespond(.text("bob", headers: headers.merging(["Set-Cookie": "session=bob"]) { $1 }))
            .thenRespond(.text("anonymous", headers: headers))
        let alice = [header: "alice-credential"]
        let bob = [header: "bob-credential"]
        #expect(try await fixture.send("/me", headers: alice).text == "alice")
        let forBob = try await fixture.send("/me", headers: bob)
        #expect(forBob.text == "bob")
        #expect(forBob.value(forHTTPHeaderField: "Set-Cookie") == "session=bob")
        #expect(try await fixture.send("/me").text == "anonymous")
        #expect(fixture.networkRequests == 3)
        // Each kept its own entry: nobody's response replaced another's.
        #expect(try await fixture.send("/me", headers: alice).text == "alice")
        // Bob's own entry, served without the cookie his response set: cookies are not stored.
        let bobAgain = try await fixture.send("/me", headers: bob)
        #expect(bobAgain.text == "bob")
        #expect(bobAgain.value(forHTTPHeaderField: "Set-Cookie") == nil)
        #expect(try await fixture.send("/me").text == "anonymous")
        #expect(fixture.networkRequests == 3)
        #expect(try fixture.folder.recordFiles().count == 3)
    }

    @Test("a stale response is revalidated only for its own credential: another credential sends no validator and never gets the stored body")
    func revalidationPartitioned() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/inbox")
            .thenRespond(.text("alice's inbox", headers: ["Cache-Control": "private, max-age=10", "ETag": "\"same\""]))
            .thenRespond(.status(304, headers: ["ETag": "\"same\""]))
        _ = try await fixture.send("/inbox", headers: ["Authorization": "Bearer alice"])
        fixture.scheduler.advance(by: .seconds(11))
        let forBob = try await fixture.send("/inbox", headers: ["Authorization": "Bearer bob"])
        #expect(fixture.stub.requests.last?.value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(forBob.statusCode == 304)
        #expect(forBob.text != "alice's inbox")
        let forAlice = try await fixture.send("/inbox", headers: ["Authorization": "Bearer alice"])
        #expect(fixture.stub.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"same\"")
        #expect(forAlice.text == "alice's inbox")
    }

    @Test("a HEAD is answered only from a GET stored for the same credential")
    func headPartitioned() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/doc").thenRespond(.text("doc", headers: ["Cache-Control": "max-age=600", "X-Owner": "alice"]))
        fixture.stub.stub(.head, path: "/doc").thenRespond(.status(200, headers: ["X-Owner": "bob"]))
        _ = try await fixture.send("/doc", headers: ["Authorization": "Bearer alice"])
        let head = try await fixture.send("/doc", method: "HEAD", headers: ["Authorization": "Bearer bob"])
        #expect(head.value(forHTTPHeaderField: "X-Owner") == "bob")
        #expect(fixture.networkRequests == 2)
    }

    @Test("no credential reaches the disk in the clear: not the Authorization, Proxy-Authorization or Cookie value, not when the response varies on them")
    func noCredentialOnDisk() async throws {
        let fixture = try HTTPCacheFixture()
        let secrets = ["Authorization": "Bearer s3cr3t-access-token", "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0", "Cookie": "session=c00kie-secret"]
        fixture.stub.stub(.get).thenRespond(.text("private", headers: [
            "Cache-Control": "private, max-age=600", "ETag": "\"1\"", "Vary": "Authorization, Cookie, Proxy-Authorization, Accept",
        ]))
        _ = try await fixture.send("/one", headers: secrets)
        _ = try await fixture.send("/two", headers: ["Authorization": secrets["Authorization"]!])
        #expect(try await fixture.send("/one", headers: secrets).text == "private")
        #expect(fixture.networkRequests == 2)
        #expect(try fixture.folder.recordFiles().count == 2)
        for name in try fixture.folder.names() {
            let bytes = Data(try fileBytes(fixture.folder.url.appendingPathComponent(name).path))
            for secret in secrets.values {
                for needle in [secret, String(secret.split(separator: " ").last!)] {
                    #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(name) holds \(needle)")
                }
            }
        }
    }

    @Test("the partition survives a relaunch and is shared by instances on the folder; another folder's digests differ")
    func partitionPerFolder() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/me").thenRespond(.text("me", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await fixture.send("/me", headers: ["Authorization": "Bearer alice"])
        let relaunched = try HTTPCache(records: DiskCache(directory: fixture.folder.url, configuration: .init(
            clock: .following(fixture.scheduler, from: HTTPCacheFixture.origin)
        )))
        let served = try await fixture.stub.caching(in: relaunched).send(fixture.request("/me", headers: ["Authorization": "Bearer alice"])).firstValue()
        #expect(served.text == "me")
        #expect(fixture.networkRequests == 1)
        // Another folder has its own key: the same credential and URL name another file.
        let elsewhere = try HTTPCacheFixture()
        elsewhere.stub.stub(.get, path: "/me").thenRespond(.text("me", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await elsewhere.send("/me", headers: ["Authorization": "Bearer alice"])
        #expect(try elsewhere.folder.recordFiles().count == 1)
        #expect(try fixture.folder.recordFiles() != elsewhere.folder.recordFiles())
    }

    @Test("instances opening one folder at once agree on its key, created once, readable by its owner only")
    func oneKeyPerFolder() throws {
        let folder = try TemporaryFolder()
        let caches = try (0..<4).map { _ in try HTTPCache(records: DiskCache(directory: folder.url)) }
        var signedIn = URLRequest(url: URL(string: "https://api.example.com/me")!)
        signedIn.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
        let request = signedIn
        let partitions = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let partition = caches[index % caches.count].partition(of: TransportRequest(request))
            partitions.withLock { $0.append(partition) }
        }
        #expect(Set(partitions.withLock { $0 }).count == 1)
        #expect(partitions.withLock { $0 }.first?.count == 64)
        #expect(try folder.names() == [DiskCache.lockFileName, DiskCache.secretKeyFileName].sorted())
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.url.appendingPathComponent(DiskCache.secretKeyFileName).path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(caches[0].partition(of: TransportRequest(URLRequest(url: URL(string: "https://api.example.com/me")!))) == "")
    }

    @Test("a response stored before the cache was partitioned (no partition in its metadata) is never served")
    func unpartitionedRecordsFromBefore() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/me")
            .thenRespond(.text("alice", headers: ["Cache-Control": "private, max-age=600"]))
            .thenRespond(.text("anonymous", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await fixture.send("/me")
        // The record as the cache wrote it before: the same key and JSON, without the partition.
        let key = HTTPCache.key(for: fixture.url("/me"))
        let record = try #require(try fixture.records.openRecord(forKey: key))
        var metadata = try #require(try JSONSerialization.jsonObject(with: record.metadata) as? [String: Any])
        #expect(metadata.removeValue(forKey: "partition") as? String == "")
        let payload = try #require(record.payload)
        let rewritten = try JSONSerialization.data(withJSONObject: metadata)
        try await fixture.records.perform { try $0.store(payload, forKey: key, metadata: rewritten) }
        #expect(try await fixture.send("/me").text == "anonymous")
        #expect(fixture.networkRequests == 2)
        #expect(try await fixture.send("/me").text == "anonymous")
        #expect(fixture.networkRequests == 2)
    }

    @Test("an unsafe request invalidates the URL's stored responses for every credential, and so does removeResponse(for:)")
    func invalidationPartitioned() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/items/1").thenRespond(.text("item", headers: ["Cache-Control": "max-age=600"]))
        fixture.stub.stub(.put, path: "/items/1").thenRespond(.status(204))
        for user in ["alice", "bob"] { _ = try await fixture.send("/items/1", headers: ["Authorization": "Bearer \(user)"]) }
        _ = try await fixture.send("/items/1")
        #expect(try fixture.folder.recordFiles().count == 3)
        _ = try await fixture.send("/items/1", method: "PUT", headers: ["Authorization": "Bearer alice"])
        #expect(fixture.events.last == .invalidated(fixture.url("/items/1")))
        #expect(try fixture.folder.recordFiles().isEmpty)
        for user in ["alice", "bob"] { _ = try await fixture.send("/items/1", headers: ["Authorization": "Bearer \(user)"]) }
        #expect(fixture.networkRequests == 6)
        #expect(try fixture.folder.recordFiles().count == 2)
        try fixture.cache.removeResponse(for: fixture.url("/items/1"))
        #expect(try fixture.folder.recordFiles().isEmpty)
    }

    @Test("a header the client marks sensitive partitions the cache like any credential: the client hands its list to the transports with each request")
    func theClientsOwnSensitiveHeadersPartition() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/me")
            .thenRespond(.text("alice", headers: ["Cache-Control": "private, max-age=600", "Vary": "X-Tenant-Badge"]))
            .thenRespond(.text("bob", headers: ["Cache-Control": "private, max-age=600"]))
        let client = HTTPClient(transport: fixture.transport) { $0.sensitiveHeaders = ["x-TENANT-badge"] }
        var request = fixture.request("/me")
        request.setValue("badge-of-alice", forHTTPHeaderField: "X-Tenant-Badge")
        #expect(try await client.send(request).firstValue().text == "alice")
        request.setValue("badge-of-bob", forHTTPHeaderField: "X-Tenant-Badge")
        #expect(try await client.send(request).firstValue().text == "bob")
        #expect(fixture.networkRequests == 2)
        request.setValue("badge-of-alice", forHTTPHeaderField: "X-Tenant-Badge")
        #expect(try await client.send(request).firstValue().text == "alice")
        #expect(fixture.networkRequests == 2)
        try expectNoSecretOnDisk(fixture.folder, secrets: ["badge-of-alice", "badge-of-bob"])
    }

    @Test("a response that varies on a secret header keeps only its digest on disk, never its value")
    func varyOnASecretHeaderKeepsNoValue() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/me")
            .thenRespond(.text("a", headers: ["Cache-Control": "private, max-age=600", "Vary": "X-Auth-Token, X-Api-Key"]))
        _ = try await fixture.send("/me", headers: ["X-Auth-Token": "token-A-s3cr3t", "X-Api-Key": "k3y-A-s3cr3t"])
        #expect(try await fixture.send("/me", headers: ["X-Auth-Token": "token-A-s3cr3t", "X-Api-Key": "k3y-A-s3cr3t"]).text == "a")
        #expect(fixture.networkRequests == 1)
        #expect(try fixture.folder.recordFiles().count == 1)
        try expectNoSecretOnDisk(fixture.folder, secrets: ["token-A-s3cr3t", "k3y-A-s3cr3t"])
    }

    @Test("records, the key and the lock are readable by their owner only (0600), in a folder of the owner's only (0700), its created parents too")
    func filesAndFoldersAreTheOwnersOnly() async throws {
        let parent = try TemporaryFolder()
        let folder = parent.url.appendingPathComponent("made/by/the-cache", isDirectory: true)
        let records = try DiskCache(directory: folder)
        let fixtureStub = StubTransport()
        fixtureStub.stub(.get).thenRespond(.text("private", headers: ["Cache-Control": "private, max-age=600"]))
        let transport = fixtureStub.caching(in: HTTPCache(records: records))
        var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
        request.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
        _ = try await transport.send(request).firstValue()
        for path in ["made", "made/by", "made/by/the-cache"] {
            #expect(try permissions(parent.url.appendingPathComponent(path).path) == 0o700, "\(path)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.contains { $0.hasSuffix(RecordID.suffix) })
        for name in names {
            #expect(try permissions(folder.appendingPathComponent(name).path) == 0o600, "\(name)")
        }
    }

    @Test("a cache folder and records left readable by others are made the owner's only when the cache opens them")
    func existingCacheFilesAreTightened() async throws {
        let folder = try TemporaryFolder()
        let fixtureStub = StubTransport()
        fixtureStub.stub(.get).thenRespond(.text("private", headers: ["Cache-Control": "private, max-age=600"]))
        _ = try await fixtureStub.caching(in: HTTPCache(records: DiskCache(directory: folder.url))).send(URLRequest(url: URL(string: "https://api.example.com/a")!)).firstValue()
        for name in try folder.names() {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder.url.appendingPathComponent(name).path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        _ = try DiskCache(directory: folder.url)
        #expect(try permissions(folder.path) == 0o700)
        for name in try folder.names() {
            #expect(try permissions(folder.url.appendingPathComponent(name).path) == 0o600, "\(name)")
        }
    }
}

/// The permission bits of the file at `path`.
private func permissions(_ path: String) throws -> Int {
    try #require((FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue) & 0o777
}

/// Expects that no file in `folder` holds any of `secrets`.
private func expectNoSecretOnDisk(_ folder: TemporaryFolder, secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
    for name in try folder.names() {
        let bytes = Data(try fileBytes(folder.url.appendingPathComponent(name).path))
        for secret in secrets {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(name) holds \(secret)", sourceLocation: sourceLocation)
        }
    }
}
