import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
@testable import TransitCache

/// Defects the `cache-freshness` fuzz target (Fuzz/cache-freshness, FUZZING.md) found in the HTTP
/// cache's freshness arithmetic, one test each.
@Suite("HTTP caching: freshness regressions found by fuzzing")
struct FreshnessRegressionTests {
    private let url = URL(string: "https://api.example.com/feed")!

    /// A 200 with `fields`, requested and received at time 0.
    private func stored(_ fields: [HTTPField]) -> StoredResponse {
        let head = HTTPResponseHead(url: url, statusCode: 200, fields: fields)
        return StoredResponse(url: url, response: head, request: URLRequest(url: url), requestTime: 0, responseTime: 0)
    }

    private func lifetime(_ fields: [HTTPField]) -> Double {
        stored(fields).freshnessLifetime(fraction: 0.1, maximumHeuristic: 86_400)
    }

    private func age(_ fields: [HTTPField]) -> Double {
        stored(fields).currentAge(now: 0)
    }

    /// RFC 9111 §4.2.1: when a directive is given more than once, the first occurrence is used
    /// (or the response is stale). The last one was used, so a `max-age` appended after the
    /// server's own made the response fresh for longer than the server said.
    @Test("a directive given twice is read as its first occurrence, in one field or two")
    func repeatedMaxAgeIsTheFirst() {
        #expect(lifetime([HTTPField(name: "Cache-Control", value: "max-age=5, max-age=100000")]) == 5)
        #expect(lifetime([HTTPField(name: "Cache-Control", value: "max-age=5"), HTTPField(name: "cache-control", value: "max-age=100000")]) == 5)
        #expect(lifetime([HTTPField(name: "Cache-Control", value: "max-age=100000, max-age")]) == 100_000)
        #expect(lifetime([HTTPField(name: "Cache-Control", value: "max-age=abc, max-age=60")]) == 0)
        let request = CacheControl("max-stale=5, max-stale, min-fresh=1, min-fresh=9, stale-if-error=3, stale-if-error=30")
        #expect(request.maxStale == 5)
        #expect(request.minFresh == 1)
        #expect(request.staleIfError == 3)
    }

    @Test("a response with max-age=5, max-age=100000 is stale after 5 seconds")
    func repeatedMaxAgeThroughTheCache() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/feed").thenRespond(.text("feed", headers: ["Cache-Control": "max-age=5, max-age=100000"]))
        _ = try await fixture.send("/feed")
        fixture.scheduler.advance(by: .seconds(4))
        _ = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 1)
        fixture.scheduler.advance(by: .seconds(2))
        _ = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 2)
    }

    /// `Age` sent twice arrives joined (`5, 100`), which is not one delta-seconds value: it was
    /// read as absent, so the response looked younger than either value said and could be served
    /// as fresh when it was not. The largest value is taken now. (Noticed while writing the
    /// `cache-freshness` target, whose oracle now covers an `Age` sent twice.)
    @Test("an Age sent twice counts as the larger value, never as no Age")
    func repeatedAgeIsTheLargest() {
        #expect(age([HTTPField(name: "Age", value: "5, 100")]) == 100)
        #expect(age([HTTPField(name: "Age", value: "100"), HTTPField(name: "age", value: "5")]) == 100)
        #expect(age([HTTPField(name: "Age", value: "7, abc")]) == 7)
        #expect(age([HTTPField(name: "Age", value: "abc")]) == 0)
        #expect(age([HTTPField(name: "Age", value: " 42 ")]) == 42)
        #expect(lifetime([HTTPField(name: "Cache-Control", value: "max-age=60"), HTTPField(name: "Age", value: "30, 90")]) == 60)
    }

    /// A 304 freshens the stored response, so its age is the 304's (RFC 9111 §4.3.4): the
    /// original's `Date` and `Age` were kept when the 304 sent none, so after revalidating, the
    /// response was as old as the first answer — here stale again 29 s later instead of 60, and
    /// served with `Age: 31`. (Noticed while writing the `cache-freshness` target.)
    @Test("a 304 without Date or Age makes the response as young as the 304")
    func notModifiedWithoutDateOrAge() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/feed")
            .thenRespond(.text("feed", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "Date": fixture.now, "Age": "30"]))
            .thenRespond(.status(304, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""]))
        _ = try await fixture.send("/feed")
        fixture.scheduler.advance(by: .seconds(31))
        let revalidated = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 2)
        #expect(revalidated.value(forHTTPHeaderField: "Age") == "0")
        #expect(revalidated.value(forHTTPHeaderField: "Date") == fixture.now)
        fixture.scheduler.advance(by: .seconds(59))
        _ = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 2)
        fixture.scheduler.advance(by: .seconds(2))
        _ = try await fixture.send("/feed")
        #expect(fixture.networkRequests == 3)
    }

    @Test("the Date written for a 304 without one is an IMF-fixdate that reads back as the same second")
    func writtenDatesReadBack() throws {
        #expect(StoredResponse.httpDate(milliseconds: 784_111_777_000) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(StoredResponse.httpDate(milliseconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(StoredResponse.httpDate(milliseconds: -1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(StoredResponse.httpDate(milliseconds: 951_782_400_999) == "Tue, 29 Feb 2000 00:00:00 GMT")
        var seconds: Int64 = -2_208_988_800  // 1900-01-01
        while seconds < 253_402_300_799 {  // 9999-12-31
            let text = StoredResponse.httpDate(milliseconds: seconds * 1000 + 500)
            let read = try #require(RetryAfter.httpDate(text, now: Date(timeIntervalSince1970: 0)), "\(text)")
            #expect(Int64(read.timeIntervalSince1970) == seconds, "\(text)")
            seconds += 7_777_777  // about 90 days and some hours: every month, weekday and time of day
        }
    }
}
