import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
@testable import TransitCache

/// The HTTP cache's metadata is read back from files, and a file can hold anything whose
/// checksums match (written by another program, or altered with them recomputed): what it says
/// must never crash the reader.
@Suite("HTTP caching: stored metadata read back from disk")
struct StoredMetadataTests {
    private let url = URL(string: "https://api.example.com/feed")!

    /// The request and response times are milliseconds as `Int64`; the current age subtracted
    /// them as integers, which traps on overflow: a record saying it was requested at
    /// `Int64.min` crashed the app at its next request for the URL.
    static let extremeTimes: [(Int64, Int64)] = [
        (.min, .max), (.max, .min), (.min, .min), (.max, .max), (0, .min), (.max, 0),
    ]

    @Test("any stored request and response times give a finite age that is not negative", arguments: extremeTimes)
    func extremeStoredTimesGiveAFiniteAge(requestTime: Int64, responseTime: Int64) {
        // Two-digit years (RFC 850) are read relative to the response time, as RFC 9110 says.
        let head = HTTPResponseHead(url: url, statusCode: 200, fields: [
            HTTPField(name: "Date", value: "Sunday, 06-Nov-94 08:49:37 GMT"), HTTPField(name: "Age", value: "5"),
            HTTPField(name: "Last-Modified", value: "Saturday, 05-Nov-94 08:49:37 GMT"),
        ])
        let stored = StoredResponse(url: url, response: head, request: URLRequest(url: url), requestTime: requestTime, responseTime: responseTime)
        for now in [Int64.min, -1, 0, 1_800_000_000_000, Int64.max] {
            let age = stored.currentAge(now: now)
            #expect(age.isFinite && age >= 0, "age \(age) at \(now)")
        }
        let lifetime = stored.freshnessLifetime(fraction: 0.1, maximumHeuristic: 86_400)
        #expect(lifetime.isFinite && lifetime >= 0)
        var expiring = stored
        expiring.headers["Expires"] = "Monday, 07-Nov-94 08:49:37 GMT"
        let expiresIn = expiring.freshnessLifetime(fraction: 0.1, maximumHeuristic: 86_400)
        #expect(expiresIn.isFinite && expiresIn >= 0)
    }

    /// A 304 without `Date` gets the time it arrived as its `Date`. Rounding the milliseconds
    /// down negated them, which traps for `Int64.min`, where a clock's milliseconds clamp (found
    /// by the `cache-metadata` fuzz target at once).
    @Test("the Date written for a 304 rounds down, at every clock value")
    func writtenDatesAtTheClocksExtremes() throws {
        #expect(StoredResponse.httpDate(milliseconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(StoredResponse.httpDate(milliseconds: -1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(StoredResponse.httpDate(milliseconds: -1000) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(StoredResponse.httpDate(milliseconds: -1001) == "Wed, 31 Dec 1969 23:59:58 GMT")
        #expect(StoredResponse.httpDate(milliseconds: 1999) == "Thu, 01 Jan 1970 00:00:01 GMT")
        let head = HTTPResponseHead(url: url, statusCode: 200, fields: [HTTPField(name: "Cache-Control", value: "max-age=60")])
        let stored = StoredResponse(url: url, response: head, request: URLRequest(url: url), requestTime: 0, responseTime: 0)
        let notModified = HTTPResponseHead(url: url, statusCode: 304, fields: [])
        for time in [Int64.min, Int64.max] {
            let updated = stored.updated(with: notModified, request: URLRequest(url: url), requestTime: time, responseTime: time)
            #expect(updated.header("Date") != nil)
            #expect(updated.currentAge(now: time).isFinite)
        }
    }

    @Test("a record whose metadata says it was requested at Int64.min is stale, not a crash")
    func hostileTimesInARecordAreStale() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/feed").thenRespond(.text("feed", headers: ["Cache-Control": "max-age=600"]))
        _ = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 1)

        // The same record, its metadata's request time rewritten (the record's own checksums are
        // those of the new metadata: it verifies).
        let key = HTTPCache.key(for: fixture.url("/feed"))
        let record = try #require(try fixture.records.openRecord(forKey: key))
        var metadata = try #require(try JSONSerialization.jsonObject(with: record.metadata) as? [String: Any])
        #expect(metadata["requestTime"] != nil)
        metadata["requestTime"] = NSNumber(value: Int64.min)
        let payload = try #require(record.payload)
        let rewritten = try JSONSerialization.data(withJSONObject: metadata)
        try await fixture.records.perform { try $0.store(payload, forKey: key, metadata: rewritten) }

        let response = try await fixture.send("/feed")
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.data, as: UTF8.self) == "feed")
        #expect(fixture.networkRequests == 2)
    }
}
