import Foundation
import Testing
import Transit
import TransitTesting

@Suite("multipart/form-data: the test parser")
struct MultipartFormDataParserTests {
    private func parse(_ text: String, boundary: String = "b") throws(MultipartFormDataParser.ParseError) -> [MultipartFormDataParser.Part] {
        try MultipartFormDataParser.parse(Data(text.utf8), boundary: boundary)
    }

    @Test func aPreambleAnEpilogueAndWhitespaceAfterADelimiterAreIgnored() throws {
        let parts = try parse("preamble\r\n--b \t\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--b--\r\nepilogue")
        #expect(parts.count == 1)
        #expect(parts.first?.name == "a")
        #expect(parts.first.map { String(decoding: $0.body, as: UTF8.self) } == "1")
    }

    @Test func headersAreReadWithTheirCaseAndParametersInAnyOrder() throws {
        let parts = try parse("--b\r\ncontent-type:  text/plain \r\nCONTENT-DISPOSITION: Form-Data; filename=\"x;y.txt\" ; name=field\r\n\r\nv\r\n--b--")
        let part = try #require(parts.first)
        #expect(part.headers == [HTTPField(name: "content-type", value: "text/plain"), HTTPField(name: "CONTENT-DISPOSITION", value: "Form-Data; filename=\"x;y.txt\" ; name=field")])
        #expect(part.contentType == "text/plain")
        #expect(part.name == "field")
        #expect(part.filename == "x;y.txt")
    }

    @Test func aPartMayHaveNoHeadersOrBeEmpty() throws {
        let parts = try parse("--b\r\n\r\nno headers\r\n--b\r\n\r\n--b--")
        #expect(parts == [
            MultipartFormDataParser.Part(headers: [], body: Data("no headers".utf8)),
            MultipartFormDataParser.Part(headers: [], body: Data()),
        ])
        #expect(parts.first?.name == nil)
    }

    @Test func aBoundaryNotAtTheStartOfALineIsContent() throws {
        let parts = try parse("--b\r\n\r\nx--b\r\n-b\r\n--b--")
        #expect(parts.map(\.body) == [Data("x--b\r\n-b".utf8)])
        // At the start of a line it is a delimiter, and junk after it (RFC 2046 allows only
        // whitespace) is an error rather than content.
        #expect(throws: MultipartFormDataParser.ParseError.malformedDelimiterLine(partIndex: 1)) { try parse("--b\r\n\r\nx\r\n--bb\r\n--b--") }
    }

    @Test func theBoundaryIsReadFromTheContentType() {
        #expect(MultipartFormDataParser.boundary(fromContentType: "multipart/form-data; boundary=abc") == "abc")
        #expect(MultipartFormDataParser.boundary(fromContentType: "Multipart/Form-Data; charset=x; BOUNDARY=\"a b\"") == "a b")
        #expect(MultipartFormDataParser.boundary(fromContentType: "text/plain; boundary=abc") == nil)
        #expect(MultipartFormDataParser.boundary(fromContentType: "multipart/form-data") == nil)
        #expect(MultipartFormDataParser.boundary(fromContentType: "multipart/form-data; boundary=") == nil)
        #expect(throws: MultipartFormDataParser.ParseError.noBoundary(contentType: "text/plain")) {
            try MultipartFormDataParser.parse(Data(), contentType: "text/plain")
        }
    }

    @Test func aQuotedParameterWithoutItsClosingQuoteRunsToTheEnd() throws {
        #expect(MultipartFormDataParser.boundary(fromContentType: "multipart/form-data; boundary=\"abc") == "abc")
        #expect(MultipartFormDataParser.boundary(fromContentType: "multipart/form-data; boundary=\"") == nil)
        #expect(MultipartFormDataParser.boundary(fromContentType: #"multipart/form-data; boundary="a\"#) == #"a\"#)
        let part = try #require(try parse("--b\r\nContent-Disposition: form-data; name=\"a b\r\n\r\nv\r\n--b--").first)
        #expect(part.name == "a b")
        #expect(part.filename == nil)
    }

    @Test func onlySpacesAndTabsAroundHeadersAndParametersAreTrimmed() throws {
        let part = try #require(try parse("--b\r\n \t Content-Type \t: \u{A0}text/plain\u{3000} \t\r\nContent-Disposition:form-data; name= \t\u{A0}x\u{A0} \t;filename \t= f\r\n\r\nv\r\n--b--").first)
        #expect(part.headers.first == HTTPField(name: "Content-Type", value: "\u{A0}text/plain\u{3000}"))
        #expect(part.contentType == "\u{A0}text/plain\u{3000}")
        #expect(part.name == "\u{A0}x\u{A0}")
        #expect(part.filename == "f")
        // A space before a combining mark stays: the mark is a scalar of its own.
        let marked = try #require(try parse("--b\r\nX: \u{301}a \u{301}\r\n\r\nv\r\n--b--").first)
        #expect(marked.headers == [HTTPField(name: "X", value: "\u{301}a \u{301}")])
    }

    /// Part headers are looked up as a server would: `Content-Diſposition` (long s) is not
    /// `Content-Disposition`, though Foundation's `caseInsensitiveCompare` took them for one.
    @Test func headerNamesMatchWithoutASCIICaseOnly() throws {
        let parts = try parse("--b\r\nContent-Diſposition: form-data; name=a\r\nContent-Type: text/plain\r\n\r\nv\r\n"
            + "--b\r\ncontent-DISPOSITION: form-data; name=b\r\n\u{212A}ind: x\r\n\r\nw\r\n--b--")
        #expect(parts.map(\.name) == [nil, "b"])
        #expect(parts.map(\.contentType) == ["text/plain", nil])
        #expect(parts[1].headers.value(for: "kind") == nil)
        #expect(parts[1].headers.value(for: "\u{212A}IND") == "x")
    }

    @Test func malformedBodiesThrowSayingWhy() {
        typealias E = MultipartFormDataParser.ParseError
        #expect(throws: E.noOpeningDelimiter) { try parse("") }
        #expect(throws: E.noOpeningDelimiter) { try parse("no delimiter here") }
        #expect(throws: E.noOpeningDelimiter) { try parse("--b--", boundary: "") }
        #expect(throws: E.missingClosingDelimiter) { try parse("--b\r\nX: y\r\n\r\nbody") }
        #expect(throws: E.missingClosingDelimiter) { try parse("--b") }
        #expect(throws: E.malformedDelimiterLine(partIndex: 0)) { try parse("--bX\r\n\r\n\r\n--b--") }
        #expect(throws: E.unterminatedHeaders(partIndex: 0)) { try parse("--b\r\nX: y\r\n--b--") }
        #expect(throws: E.malformedHeaderLine(partIndex: 1)) { try parse("--b\r\n\r\n\r\n--b\r\nno colon\r\n\r\nx\r\n--b--") }
        #expect(throws: E.malformedHeaderLine(partIndex: 0)) { try parse("--b\r\n: empty name\r\n\r\nx\r\n--b--") }
    }

    @Test func anyInputEitherParsesOrThrows() {
        // Inputs assembled from the pieces that matter to the parser: it must never trap.
        let pieces = ["--b", "--", "\r\n", "\r", "\n", " ", "X: y", "Content-Disposition: form-data; name=\"", "\"", ";", "=", "%22", "b", "\u{0}", "é"]
        var generator = SeededGenerator(seed: 5)
        var parsed = 0
        for _ in 0..<5000 {
            let text = (0..<Int.random(in: 0...16, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            if (try? parse(text)) != nil { parsed += 1 }
        }
        #expect(parsed > 0)
    }
}
