import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
@testable import TransitCache

/// Defects the `vary` fuzz target (Fuzz/vary, FUZZING.md) found in the HTTP cache's `Vary`
/// matching, one test each.
@Suite("HTTP caching: Vary regressions found by fuzzing")
struct VaryRegressionTests {
    private let url = URL(string: "https://api.example.com/greeting")!

    private func stored(vary: String, requestHeaders: [String: String]) -> StoredResponse {
        let response = HTTPResponseHead(url: url, statusCode: 200, headerFields: ["Vary": vary])
        return StoredResponse(url: url, response: response, request: request(requestHeaders), requestTime: 0, responseTime: 0)
    }

    private func request(_ headers: [String: String]) -> URLRequest {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// RFC 9111 §4.1: a stored response whose Vary has a `*` member always fails to match. It
    /// matched every request that, like its own, had no header named `*`.
    @Test("a stored response that varies on * matches no request, not even its own", arguments: ["*", "Accept, *", " * "])
    func varyStarNeverMatches(vary: String) {
        let headers = ["Accept": "text/html"]
        #expect(!stored(vary: vary, requestHeaders: headers).matches(request(headers)))
    }

    /// OWS around the commas of a varied header's value was removed on Characters, so a comma
    /// or a space followed by a combining mark (one Character with it) kept the whitespace, and
    /// the same list, spelled with other OWS, did not match.
    @Test("OWS around commas is ignored on Unicode scalars: a combining mark after a comma or space changes nothing")
    func listWhitespaceOnScalars() {
        let response = stored(vary: "Accept", requestHeaders: ["Accept": "x ,\u{301}y"])
        #expect(response.matches(request(["Accept": "x,\u{301}y"])))
        #expect(response.matches(request(["Accept": "x , \u{301}y"])))
        #expect(!response.matches(request(["Accept": "x,y"])))
        // A combining mark after the comma of a Vary value no longer hides the name before it.
        #expect(StoredResponse.varyNames("Accept ,\u{301}Cookie") == ["accept", "\u{301}cookie"])
    }

    /// A 304 merged its headers, `Vary` included, into the stored response, but matching kept
    /// using the Vary of the original 200: the stored headers said `Vary: Accept-Language` (or
    /// `*`) while every language got the stored response.
    @Test("a 304 with a Vary of its own: the stored response then varies on that Vary")
    func notModifiedVary() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/greeting")
            .thenRespond(.text("hello", headers: ["Cache-Control": "max-age=10", "ETag": "\"1\""]))
            .thenRespond(.status(304, headers: ["Cache-Control": "max-age=600", "ETag": "\"1\"", "Vary": "Accept-Language"]))
            .thenRespond(.text("bonjour", headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"]))
        _ = try await fixture.send("/greeting", headers: ["Accept-Language": "en"])
        fixture.scheduler.advance(by: .seconds(11))
        let revalidated = try await fixture.send("/greeting", headers: ["Accept-Language": "en"])
        #expect(revalidated.text == "hello")
        #expect(fixture.networkRequests == 2)
        let french = try await fixture.send("/greeting", headers: ["Accept-Language": "fr"])
        #expect(french.text == "bonjour")
        #expect(fixture.networkRequests == 3)
    }

    @Test("a 304 with Vary: * leaves a stored response that no later request gets")
    func notModifiedVaryStar() async throws {
        let fixture = try HTTPCacheFixture()
        fixture.stub.stub(.get, path: "/star")
            .thenRespond(.text("one", headers: ["Cache-Control": "max-age=10", "ETag": "\"1\""]))
            .thenRespond(.status(304, headers: ["Cache-Control": "max-age=600", "ETag": "\"1\"", "Vary": "*"]))
            .thenRespond(.text("two", headers: ["Cache-Control": "max-age=600"]))
        _ = try await fixture.send("/star")
        fixture.scheduler.advance(by: .seconds(11))
        #expect(try await fixture.send("/star").text == "one")
        #expect(try await fixture.send("/star").text == "two")
        #expect(fixture.networkRequests == 3)
    }
}
