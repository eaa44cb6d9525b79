import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitCache
import TransitTesting

// A `Set-Cookie` is a credential the server hands to this client once: it is delivered with the
// response that carried it, and never written to the cache's files or served again from them.

@Suite("HTTP caching: Set-Cookie is never stored")
struct HTTPCacheCookieTests {
    /// Every byte of every file under the cache's folder, concatenated.
    private func folderBytes(_ fixture: HTTPCacheFixture) throws -> Data {
        var bytes = Data()
        let files = FileManager.default.enumerator(at: fixture.folder.url, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            if let contents = try? Data(contentsOf: file) { bytes.append(contents) }
        }
        return bytes
    }

    @Test("the response from the network carries its Set-Cookie; the stored record and the hit do not")
    func setCookieIsDeliveredButNotStored() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/session").thenRespond(.text("welcome", headers: [
            "Cache-Control": "max-age=60", "Set-Cookie": "session=secret-123; HttpOnly", "Set-Cookie2": "legacy=secret-456",
        ]))
        let first = try await fixture.send("/session")
        #expect(first.value(forHTTPHeaderField: "Set-Cookie") == "session=secret-123; HttpOnly")
        #expect(fixture.events == [.miss(fixture.url("/session")), .stored(fixture.url("/session"))])
        let stored = try folderBytes(fixture)
        #expect(!stored.isEmpty)
        #expect(stored.range(of: Data("secret-123".utf8)) == nil)
        #expect(stored.range(of: Data("secret-456".utf8)) == nil)

        let hit = try await fixture.send("/session")
        #expect(hit.text == "welcome")
        #expect(fixture.networkRequests == 1)
        #expect(hit.value(forHTTPHeaderField: "Set-Cookie") == nil)
        #expect(hit.value(forHTTPHeaderField: "Set-Cookie2") == nil)
    }

    @Test("a 304 that sets a cookie delivers it with the revalidated response, and does not store it")
    func setCookieOfARevalidationIsNotStored() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/feed")
            .thenRespond(.text("the feed", headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""]))
            .thenRespond(.status(304, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "Set-Cookie": "session=rotated-789"]))
        _ = try await fixture.send("/feed")
        fixture.scheduler.advance(by: .seconds(11))
        let revalidated = try await fixture.send("/feed")
        #expect(revalidated.text == "the feed")
        #expect(revalidated.value(forHTTPHeaderField: "Set-Cookie") == "session=rotated-789")
        #expect(fixture.networkRequests == 2)
        #expect(try folderBytes(fixture).range(of: Data("rotated-789".utf8)) == nil)
        let hit = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 2)
        #expect(hit.value(forHTTPHeaderField: "Set-Cookie") == nil)
    }
}
