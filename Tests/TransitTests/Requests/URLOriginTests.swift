import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// `URLOrigin`'s one-scan fast path against the Foundation code it replaces: for every URL the
/// key and the origins must be those of Foundation, byte for byte.
@Suite("URL origins and keys")
struct URLOriginTests {
    /// Expects the fast path (or its fallback) to give Foundation's key and origins for `string`.
    private func expectFoundationResults(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(URLOrigin.key(url) == URLOrigin.foundationKey(url), "\(url.absoluteString)", sourceLocation: sourceLocation)
        #expect(URLOrigin.origin(url) == URLOrigin.foundationOrigin(url), "\(url.absoluteString)", sourceLocation: sourceLocation)
        #expect(URLOrigin.hostOrigin(url) == URLOrigin.foundationHostOrigin(url), "\(url.absoluteString)", sourceLocation: sourceLocation)
        // A credential scope's reading: the scheme and host, as Foundation reads them, lowercased.
        if let (scheme, host) = URLOrigin.plainSchemeAndHost(url) {
            #expect(scheme == url.scheme?.lowercased() && host == url.host?.lowercased(), "\(url.absoluteString)", sourceLocation: sourceLocation)
        }
    }

    /// The last URL read is remembered with its key and origin: from many threads at once, and
    /// for URLs that differ in one byte, each still gets its own.
    @Test func aRememberedURLNeverAnswersForAnother() {
        let urls = ["https://api.example.com/v1/posts", "https://api.example.com/v2/posts", "https://api.example.com:8443/v1/posts",
                    "https://API.example.com/v1/posts", "http://api.example.com/v1/posts", "https://api.example.co/v1/posts"]
            .map { URL(string: $0)! }
        let expected = urls.map { (URLOrigin.foundationKey($0), URLOrigin.foundationOrigin($0), URLOrigin.foundationHostOrigin($0)) }
        let mismatches = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4_000) { iteration in
            let index = (iteration * 7 + iteration / 3) % urls.count
            let url = urls[index]
            let (key, origin, hostOrigin) = expected[index]
            if URLOrigin.key(url) != key || URLOrigin.origin(url) != origin || URLOrigin.hostOrigin(url) != hostOrigin {
                mismatches.withLock { $0 += 1 }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }

    /// URLs, whether the key's fast path reads them (`true`) or Foundation (`false`), and the key.
    static let table: [(url: String, plain: Bool, key: String)] = [
        ("https://api.example.com/v1/posts", true, "https://api.example.com:443/v1"),
        ("HTTPS://API.Example.COM/V1/x", true, "https://api.example.com:443/V1"),
        ("https://api.example.com:443/v1", true, "https://api.example.com:443/v1"),
        ("http://api.example.com:80/v1", true, "http://api.example.com:80/v1"),
        ("http://api.example.com:8080/v1", true, "http://api.example.com:8080/v1"),
        ("https://api.example.com:80/v1", true, "https://api.example.com:80/v1"),
        ("http://h:/x", true, "http://h:80/x"),
        ("https://h:/x", true, "https://h:443/x"),
        ("http://h:0080/x", true, "http://h:80/x"),
        ("http://h:00000/x", true, "http://h:0/x"),
        ("http://h:99999/x", true, "http://h:99999/x"),
        ("http://h:123456/x", false, "http://h:123456/x"),
        ("https://api.example.com", true, "https://api.example.com:443/"),
        ("https://api.example.com/", true, "https://api.example.com:443/"),
        ("https://api.example.com///", true, "https://api.example.com:443/"),
        ("https://api.example.com//v1//x", true, "https://api.example.com:443/v1"),
        ("https://api.example.com?q=1", true, "https://api.example.com:443/"),
        ("https://api.example.com#top", true, "https://api.example.com:443/"),
        ("https://api.example.com:8443?q", true, "https://api.example.com:8443/"),
        ("https://api.example.com/v1?q=/x", true, "https://api.example.com:443/v1"),
        ("https://api.example.com/v1#/x;y%zz", true, "https://api.example.com:443/v1"),
        ("https://api.example.com/v1?x;y%41", true, "https://api.example.com:443/v1"),
        ("https://a-b.c_d.example/x", false, "https://a-b.c_d.example:443/x"),
        ("https://api.example.com/a-b.c_d~e/x", true, "https://api.example.com:443/a-b.c_d~e"),
        ("https://api.example.com/./v1", true, "https://api.example.com:443/."),
        ("https://api.example.com/../v1", true, "https://api.example.com:443/.."),
        ("https://user@api.example.com/v1", false, "https://api.example.com:443/v1"),
        ("https://user:pw@api.example.com:8443/v1", false, "https://api.example.com:8443/v1"),
        ("http://[::1]:8080/v1", false, "http://::1:8080/v1"),
        ("http://[::1]/v1", false, "http://::1:80/v1"),
        ("https://api%2Eexample.com/v1", false, "https://api.example.com:443/v1"),
        ("https://api.example.com/%76%31/x", false, "https://api.example.com:443/v1"),
        ("https://api.example.com/%C3%A9t%C3%A9/x", false, "https://api.example.com:443/été"),
        ("https://api.example.com/v1/%FF", false, URLOrigin.foundationKey(URL(string: "https://api.example.com/v1/%FF")!)),
        ("https://api.example.com/v1;p/x", false, URLOrigin.foundationKey(URL(string: "https://api.example.com/v1;p/x")!)),
        ("https://api.example.com/v1/x;p", false, URLOrigin.foundationKey(URL(string: "https://api.example.com/v1/x;p")!)),
        ("https://api.example.com/@v1/x", false, "https://api.example.com:443/@v1"),
        ("https://api.example.com/v1:2/x", false, "https://api.example.com:443/v1:2"),
        ("https://api.example.com/v1/a:b@c!$&'()*+,=/x", true, "https://api.example.com:443/v1"),
        ("http://:8080/x", false, "http://:8080/x"),
        ("http:///x", false, "http://:80/x"),
        ("ftp://files.example.com/pub/x", true, "ftp://files.example.com:80/pub"),
        ("wss://Socket.example.com/chat", true, "wss://socket.example.com:80/chat"),
        ("git+ssh://h.example/repo", true, "git+ssh://h.example:80/repo"),
        ("mailto:someone@example.com", false, "mailto://:80/someone@example.com"),
        ("file:///tmp/x", false, "file://:80/tmp"),
    ]

    @Test(arguments: Self.table.indices)
    func theFastPathGivesFoundationsKey(_ index: Int) throws {
        let entry = Self.table[index]
        let url = try #require(URL(string: entry.url))
        #expect((URLOrigin.plain(url, withFirstSegment: true) != nil) == entry.plain, "\(entry.url)")
        #expect(URLOrigin.key(url) == entry.key)
        expectFoundationResults(url)
    }

    @Test func thePublicKeysUseIt() {
        let request = URLRequest(url: URL(string: "HTTP://API.example.com:0080//v1//x?y")!)
        #expect(RequestKey.originAndFirstSegment.key(request) == "http://api.example.com:80/v1")
        #expect(RequestKey.origin.key(request) == "http://api.example.com:80")
        #expect(HostFailover.origin(request.url!) == "http://api.example.com:80")
        var noURL = URLRequest(url: URL(string: "https://x.example")!)
        noURL.url = nil
        #expect(RequestKey.originAndFirstSegment.key(noURL) == "")
        #expect(RequestKey.origin.key(noURL) == "")
    }

    @Test func relativeURLsAreLeftToFoundation() throws {
        let base = try #require(URL(string: "https://Base.example:8443/a/b"))
        for relative in ["v1/x", "/v2/y", "//other.example/z", "?q", "../../up/x"] {
            let url = try #require(URL(string: relative, relativeTo: base))
            #expect(URLOrigin.plain(url, withFirstSegment: true) == nil)
            expectFoundationResults(url)
        }
        // An absolute string drops the base: an absolute URL.
        let absolute = try #require(URL(string: "http://abs.example/v3", relativeTo: base))
        #expect(URLOrigin.key(absolute) == "http://abs.example:80/v3")
        expectFoundationResults(absolute)
    }

    /// A few thousand URLs made of plain and awkward pieces (seeded, the same every run).
    @Test func generatedURLsGiveFoundationsResults() {
        var random = SeededGenerator(seed: 0x5EED_F00D)
        let schemes = ["http", "https", "HTTP", "HtTpS", "ftp", "ws", "wss", "a+b.c-d", "x1", "h.t-t+p", "1http", "ht_tp", "htt%70"]
        let hostPieces = ["api", "Example", "COM", "a-b", "0", "127", "1", ".", "-", "_", "~", "%41", "%2E", "%zz", "é", "@", "user@", "u:p@", "[::1]", "[fe80::1%25en0]", "!", "$", "*", " "]
        let pathPieces = ["/", "/", "/", "v1", "V2", "users", "a-b", "a.b", "_", "~", ".", "..", "%41", "%2F", "%FF", "%C3%A9", "%zz", "%", ";", ";p=1", "@", ":", "!", "$", "&", "'", "(", "*", "+", ",", "=", "é", " ", "|", "\\", "[", "]", "^", "`", "{", "\""]
        let tailPieces = ["", "", "?", "?q=1", "?a=/b;c%zz", "#", "#frag", "#/x?y", "?x#y", "?é"]
        var plain = 0
        var compared = 0
        for _ in 0..<6_000 {
            var string = random.pick(schemes) + (random.next() % 16 == 0 ? ":/" : "://")
            for _ in 0..<(1 + random.next() % 3) {
                string += random.next() % 3 == 0 ? random.pick(hostPieces) : random.pick(["api", "example", ".", "com", "h", "-", "X9"])
            }
            switch random.next() % 6 {
            case 0: string += ":"
            case 1, 2: string += ":" + String(repeating: "0", count: Int(random.next() % 3)) + String(random.next() % 100_000)
            case 3: string += ":" + String(random.next() % 10_000_000)
            default: break
            }
            for _ in 0..<(random.next() % 6) {
                string += random.next() % 3 == 0 ? random.pick(pathPieces) : random.pick(["/", "/", "v1", "users", "42", "a.b"])
            }
            string += random.pick(tailPieces)
            guard let url = URL(string: string) else { continue }
            compared += 1
            if URLOrigin.plain(url, withFirstSegment: true) != nil { plain += 1 }
            expectFoundationResults(url)
        }
        // Both paths are exercised.
        #expect(compared > 2_000)
        #expect(plain > 500)
        #expect(compared - plain > 500)
    }

    @Test func aFailoverPlanIsTheOriginsAsTheyAreWhileNothingIsQuarantined() throws {
        let scheduler = TestScheduler()
        let failover = HostFailover(
            origins: ["https://a.example", "https://b.example", "https://c.example"], quarantine: .seconds(30)
        )
        let request = URLRequest(url: URL(string: "HTTPS://B.example:443/v1/x")!)
        let plan = try #require(failover.plan(for: request.url, on: scheduler, forgettingRecovered: true))
        #expect(plan.origin == "https://b.example:443")
        #expect(plan.origins == ["https://a.example:443", "https://b.example:443", "https://c.example:443"])
        #expect(plan.recovered.isEmpty)
        #expect(failover.plan(for: URL(string: "https://d.example/x")!, on: scheduler, forgettingRecovered: false) == nil)

        // Quarantined: last, by the end of their quarantine.
        failover.markFailed("https://a.example:443", on: scheduler)
        scheduler.advance(by: .seconds(10))
        failover.markFailed("https://b.example:443", on: scheduler)
        #expect(failover.plan(for: request, on: scheduler) == ["https://c.example:443", "https://a.example:443", "https://b.example:443"])
        // Over but not forgotten: the preference order; forgotten once, reported once.
        scheduler.advance(by: .seconds(40))
        #expect(failover.plan(for: request, on: scheduler) == ["https://a.example:443", "https://b.example:443", "https://c.example:443"])
        #expect(failover.plan(for: request.url, on: scheduler, forgettingRecovered: true)?.recovered == ["https://a.example:443", "https://b.example:443"])
        #expect(failover.plan(for: request.url, on: scheduler, forgettingRecovered: true)?.recovered == [])
    }

    @Test func aRequestAtItsOwnOriginIsSentAsItIs() throws {
        let request = TransportRequest(URLRequest(url: URL(string: "https://a.example/v1/x?y=1")!))
        let same = HostFailover.request(request, at: "https://a.example:443", from: "https://a.example:443")
        #expect(same.urlRequest.url?.absoluteString == "https://a.example/v1/x?y=1")
        let moved = HostFailover.request(request, at: "http://b.example:8080", from: "https://a.example:443")
        #expect(moved.urlRequest.url?.absoluteString == "http://b.example:8080/v1/x?y=1")
    }
}

/// The seeded generator of the form tests, so the generated URLs are the same on every run.
extension SeededGenerator {
    mutating func pick(_ items: [String]) -> String {
        items[Int(next() % UInt64(items.count))]
    }
}
