import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// A small deterministic generator (SplitMix64), so "random" inputs are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Scalars that stress form and multipart encoders: separators, escapes, line breaks, control
/// characters, non-ASCII letters, combining marks, emoji.
let trickyScalars: [Unicode.Scalar] = [
    "a", "Z", "0", "9", " ", "+", "&", "=", "%", "*", "-", ".", "_", "~", "!", "'", "(", ")", "/", "?", "#", ";", ":",
    "\"", "\\", "\r", "\n", "\t", "\u{0}", "\u{7F}", "é", "ß", "\u{301}", "中", "\u{FEFF}", "😀", "\u{1F1EB}", "\u{1F1F7}",
]

/// A random string of up to `maxLength` scalars from `pool`.
func randomString(_ generator: inout SeededGenerator, pool: [Unicode.Scalar] = trickyScalars, maxLength: Int = 12) -> String {
    let length = Int.random(in: 0...maxLength, using: &generator)
    var scalars = String.UnicodeScalarView()
    for _ in 0..<length { scalars.append(pool.randomElement(using: &generator)!) }
    return String(scalars)
}

@Suite("application/x-www-form-urlencoded")
struct URLEncodedFormTests {
    // MARK: serialising

    @Test func aSpaceIsAPlusAndOnlyLettersDigitsAndStarDashDotUnderscoreAreKept() {
        #expect(URLEncodedForm.encode("a b") == "a+b")
        #expect(URLEncodedForm.encode("AZaz09*-._") == "AZaz09*-._")
        #expect(URLEncodedForm.encode("~!'()+&=%/?#;:,@[]$") == "%7E%21%27%28%29%2B%26%3D%25%2F%3F%23%3B%3A%2C%40%5B%5D%24")
        #expect(URLEncodedForm.encode("\r\n\t\u{0}\u{7F}") == "%0D%0A%09%00%7F")
    }

    @Test func nonASCIIIsPercentEncodedAsUTF8InUpperCaseHex() {
        #expect(URLEncodedForm.encode("é") == "%C3%A9")
        #expect(URLEncodedForm.encode("😀") == "%F0%9F%98%80")
        #expect(URLEncodedForm.encode("e\u{301}") == "e%CC%81")
    }

    @Test func fieldsKeepTheirOrderAndNamesMayRepeat() {
        let form: URLEncodedForm = ["tag": "b", "q": "swift & signals", "tag": "a"]
        #expect(form.encodedString == "tag=b&q=swift+%26+signals&tag=a")
        #expect(form.fields.filter { $0.name == "tag" }.map(\.value) == ["b", "a"])
        #expect(form.fields.filter { $0.name == "none" }.map(\.value) == [])
        #expect(form.encodedData == Data("tag=b&q=swift+%26+signals&tag=a".utf8))
    }

    @Test func appendAddsAfterTheExistingFields() {
        var form = URLEncodedForm()
        #expect(form.encodedString == "")
        form.fields.append(.init(name: "a", value: "1"))
        form.fields.append(.init(name: "a", value: ""))
        form.fields.append(.init(name: "", value: "x y"))
        #expect(form.encodedString == "a=1&a=&=x+y")
        #expect(form.fields == [.init(name: "a", value: "1"), .init(name: "a", value: ""), .init(name: "", value: "x y")])
    }

    // MARK: parsing (the WHATWG parser)

    @Test func parsingSplitsAtAmpersandsAndTheFirstEquals() {
        #expect(URLEncodedForm(parsing: "a=1&b=x=y&c").fields == [
            .init(name: "a", value: "1"), .init(name: "b", value: "x=y"), .init(name: "c", value: ""),
        ])
    }

    @Test func parsingSkipsEmptyPieces() {
        #expect(URLEncodedForm(parsing: "&&a=1&&").fields == [.init(name: "a", value: "1")])
        #expect(URLEncodedForm(parsing: "").fields.isEmpty)
        #expect(URLEncodedForm(parsing: "=").fields == [.init(name: "", value: "")])
    }

    @Test func parsingDecodesPlusAndPercentButKeepsBrokenEscapes() {
        #expect(URLEncodedForm(parsing: "a+b=%2B%20").fields == [.init(name: "a b", value: "+ ")])
        #expect(URLEncodedForm(parsing: "x=%zz%4%").fields.filter { $0.name == "x" }.map(\.value) == ["%zz%4%"])
        #expect(URLEncodedForm(parsing: "x=%c3%A9").fields.filter { $0.name == "x" }.map(\.value) == ["é"])
    }

    @Test func parsingReplacesInvalidUTF8AndKeepsAByteOrderMark() {
        #expect(URLEncodedForm(parsing: "x=%FF%C3").fields.filter { $0.name == "x" }.map(\.value) == ["\u{FFFD}\u{FFFD}"])
        let bom = URLEncodedForm(parsing: "%EF%BB%BFx=1").fields[0].name
        #expect(Array(bom.unicodeScalars) == ["\u{FEFF}", "x"])
        #expect(URLEncodedForm(parsing: Data([0x61, 0x3D, 0xFF])).fields.filter { $0.name == "a" }.map(\.value) == ["\u{FFFD}"])
    }

    @Test func everyFormReadsBackAsItWasWritten() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...5, using: &generator)
            let form = URLEncodedForm((0..<count).map { _ in
                .init(name: randomString(&generator), value: randomString(&generator))
            })
            let parsed = URLEncodedForm(parsing: form.encodedString)
            #expect(parsed == form, "\(form.fields)")
            // Exactly: the same scalars, not only canonically equivalent strings.
            #expect(parsed.fields.map { Array($0.name.unicodeScalars) } == form.fields.map { Array($0.name.unicodeScalars) })
            #expect(parsed.fields.map { Array($0.value.unicodeScalars) } == form.fields.map { Array($0.value.unicodeScalars) })
            // The serialisation is ASCII with no separator but `&` and `=` between fields.
            #expect(form.encodedString.utf8.allSatisfy { $0 < 0x80 && $0 > 0x20 })
        }
    }

    // MARK: sending

    @Test func sendingFormSetsTheBodyAndTheContentType() throws {
        var request = URLRequest(url: URL(string: "https://api.example.com/token")!)
        request.setValue("text/plain", forHTTPHeaderField: "content-type")
        let sent = request.sendingForm(["grant_type": "refresh_token", "token": "a+b/c="])
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.httpBody == Data("grant_type=refresh_token&token=a%2Bb%2Fc%3D".utf8))
        // The receiver is untouched.
        #expect(request.httpBody == nil)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "text/plain")
    }

    @Test func sendingFormOnARequestWithoutAURLChangesNothing() {
        var request = URLRequest(url: URL(string: "https://api.example.com")!)
        request.url = nil
        let sent = request.sendingForm(["a": "1"])
        #expect(sent.httpBody == nil)
        let transport = StubTransport()
        let probe = RequestProbe(HTTPClient(transport: transport).send(sent))
        #expect(probe.failure as? URLRequestError == .invalidURL)
        #expect(transport.requests.isEmpty)
    }

    @Test func aServicePostsAFormAndItsModifierRunsAfter() throws {
        let transport = StubTransport()
        transport.stub(.post, path: "/v1/token").thenRespond(.text("ok"))
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.post(endpoint: "token", body: .form(["user": "ann lee", "pass": "p&ss"])) {
            var request = $0
            request.setValue("1", forHTTPHeaderField: "X-Attempt")
            return request
        })
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == "POST")
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.value(forHTTPHeaderField: "X-Attempt") == "1")
        #expect(sent.httpBody.map { URLEncodedForm(parsing: $0) } == ["user": "ann lee", "pass": "p&ss"])
    }

    @Test func theGeneralVerbTakesAnyMethod() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.status(204))
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.request(method: .put, endpoint: "settings", body: .form(["theme": "dark"])))
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == "PUT")
        #expect(sent.httpBody == Data("theme=dark".utf8))
    }
}
