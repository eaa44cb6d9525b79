import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Transit

@Suite("HTTPResponseHead")
struct HTTPResponseHeadTests {
    let url = URL(string: "https://user:secret@api.example.com/items?token=abc")!

    func head(_ fields: [(String, String)], status: Int = 200) -> HTTPResponseHead {
        HTTPResponseHead(url: url, statusCode: status, fields: fields.map { HTTPField(name: $0.0, value: $0.1) })
    }

    @Test func keepsEveryFieldInOrderAndLooksNamesUpWithoutCase() {
        let head = head([("Set-Cookie", "a=1"), ("Content-Type", "text/plain"), ("set-cookie", "b=2"), ("X-Id", "7")])
        #expect(head.fields.map(\.name) == ["Set-Cookie", "Content-Type", "set-cookie", "X-Id"])
        #expect(head.values(forHTTPHeaderField: "SET-COOKIE") == ["a=1", "b=2"])
        #expect(head.value(forHTTPHeaderField: "set-cookie") == "a=1, b=2")
        #expect(head.value(forHTTPHeaderField: "content-type") == "text/plain")
        #expect(head.value(forHTTPHeaderField: "Content-Typ") == nil)
        #expect(head.value(forHTTPHeaderField: "Content-Type-") == nil)
        #expect(head.values(forHTTPHeaderField: "Absent").isEmpty)
        #expect(head.allHeaderFields == ["Set-Cookie": "a=1, b=2", "Content-Type": "text/plain", "X-Id": "7"])
    }

    @Test func namesDifferingOutsideLettersAreDifferent() {
        // '[' and '{' differ by 0x20 as 'A' and 'a' do, but are not letters.
        #expect(!HTTPSyntax.sameFieldName("X-[", "X-{"))
        #expect(HTTPSyntax.sameFieldName("Content-Length", "content-LENGTH"))
        #expect(!HTTPSyntax.sameFieldName("Accept", "Accept-Encoding"))
        #expect(!HTTPSyntax.sameFieldName("", "A"))
    }

    @Test(arguments: [
        ([("Content-Length", "1234")], Int64(1234)),
        ([("content-length", "0")], 0),
        ([], -1),
        ([("Content-Length", "12"), ("Content-Length", "12")], 12),
        ([("Content-Length", "12"), ("Content-Length", "13")], -1),
        ([("Content-Length", "-5")], -1),
        ([("Content-Length", "+5")], -1),
        ([("Content-Length", "5 5")], -1),
        ([("Content-Length", "")], -1),
        ([("Content-Length", String(repeating: "9", count: 400))], -1),
        ([("Content-Length", "0x10")], -1),
        ([("Content-Length", " 7\t")], 7),
        ([("Content-Length", "7,7")], 7),
        ([("Content-Length", "7, 8")], -1),
        ([("Content-Length", "12,,12")], -1),
        ([("Content-Length", "12,")], -1),
        ([("Content-Length", "999999999999999999")], 999_999_999_999_999_999),
        ([("Content-Length", "1000000000000000000")], -1),
    ] as [([(String, String)], Int64)])
    func declaredLengthIsOneNonNegativeNumberOrNone(fields: [(String, String)], expected: Int64) {
        #expect(head(fields).expectedContentLength == expected)
    }

    @Test func theFoundationResponseIsMadeOnceAndAgrees() {
        let head = head([("Content-Type", "application/json"), ("ETag", "\"v1\""), ("etag", "\"v2\"")], status: 404)
        let response = head.urlResponse
        #expect(response === head.urlResponse)
        #expect(response.statusCode == 404)
        #expect(response.url == url)
        #expect(response.value(forHTTPHeaderField: "content-type") == "application/json")
        #expect(response.value(forHTTPHeaderField: "ETag") == "\"v1\", \"v2\"")
    }

    @Test func aWrappedFoundationResponseIsUsedAsItIs() throws {
        let response = try #require(HTTPURLResponse(url: url, statusCode: 201, httpVersion: "HTTP/1.1", headerFields: ["Location": "/items/9", "Content-Length": "3"]))
        let head = HTTPResponseHead(response)
        #expect(head.urlResponse === response)
        #expect(head.statusCode == 201)
        #expect(head.value(forHTTPHeaderField: "location") == "/items/9")
        #expect(head.expectedContentLength == 3)
        #expect(head.fields.count == 2)
    }

    @Test func aResponseReadsThroughItsHead() throws {
        let response = HTTPResponse(data: Data("ok".utf8), head: head([("X-A", "1"), ("x-a", "2")], status: 202), request: URLRequest(url: url))
        #expect(response.statusCode == 202)
        #expect(response.value(forHTTPHeaderField: "X-A") == "1, 2")
        #expect(response.head.allHeaderFields == ["X-A": "1, 2"])
        #expect(response.head.urlResponse.statusCode == 202)
    }

    @Test func theDescriptionHasNoCredentialsAndNoValues() {
        let text = head([("Set-Cookie", "session=hunter2")]).description
        #expect(!text.contains("secret"))
        #expect(!text.contains("hunter2"))
        #expect(!text.contains("token=abc"))
        #expect(text.contains("Set-Cookie"))
    }
}

extension HTTPResponseHeadTests {
    @Test func theDictionaryGroupsNamesAsLookupsDo() {
        // U+212A KELVIN SIGN lowercases to "k" in Unicode but is not the ASCII letter.
        let head = head([("X-\u{212A}", "1"), ("x-k", "2"), ("X-K", "3")])
        #expect(head.value(forHTTPHeaderField: "x-k") == "2, 3")
        #expect(head.value(forHTTPHeaderField: "X-\u{212A}") == "1")
        #expect(head.allHeaderFields == ["X-\u{212A}": "1", "x-k": "2, 3"])
    }

    /// Found by the `response-head` fuzz target: names whose bytes differ but which are equal as
    /// Swift strings (canonically equivalent) are one key of the dictionary; the second one's
    /// value used to replace the first one's.
    @Test func namesEqualAsStringsButNotAsBytesShareOneEntryAndLoseNoValue() {
        let kelvin = head([("X-\u{212A}", "1"), ("X-K", "2"), ("x-k", "3")])
        #expect(kelvin.value(forHTTPHeaderField: "X-\u{212A}") == "1")
        #expect(kelvin.value(forHTTPHeaderField: "x-k") == "2, 3")
        #expect(kelvin.allHeaderFields.count == 1)
        #expect(kelvin.allHeaderFields["X-\u{212A}"] == "1, 2, 3")

        let accents = head([("Caf\u{E9}", "nfc"), ("cafe\u{301}", "nfd"), ("Other", "o")])
        #expect(accents.value(forHTTPHeaderField: "caf\u{E9}") == "nfc")
        #expect(accents.allHeaderFields.count == 2)
        #expect(accents.allHeaderFields["Caf\u{E9}"] == "nfc, nfd")
        #expect(accents.allHeaderFields["Other"] == "o")
    }
}
