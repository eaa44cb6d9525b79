import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitTesting

/// Defects the fuzz targets in Fuzz/ found (see FUZZING.md), one test each, so that they stay
/// fixed without running the fuzzer.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    let transport = StubTransport()

    /// Found by Fuzz/url-builder: Foundation accepts these bases, but libcurl (which URLSession
    /// uses on Linux) refuses them, or Foundation re-encodes the user info and changes the
    /// credentials; they must fail at once with `URLError(.badURL)`, not late in the transport.
    @Test("a base URL whose host, port or user info libcurl reads differently fails with badURL", arguments: [
        "https://api.example.com:99999/v1",                         // port above 65535
        "https://api.example.com:99999999999999999999999/v1",       // Foundation reads no port at all
        "https://api;example.com/v1", "https://api.example.com$/v1", // sub-delimiters in the host
        "http://%1eh/v1", "http://h%41st/v1",                        // percent-encoded host
        "http://[eth0]/v1", "http://[::1/v1",                        // brackets without an IPv6 address
        "http://[fe80::1%25abcdefghijklmnop]/v1",                    // an IPv6 zone longer than 15
        "http://a@b@api.example.com/v1",                             // '@' in the user info
        "http://;h%41ZZZ]]]]]ass@api.example.com/v1",               // Foundation would turn %41 into %2541
    ])
    func baseAuthorityLibcurlRefuses(base: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts"))
        #expect(URLError.matches(probe.failure, .badURL), "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(transport.requests.isEmpty)
    }

    @Test("hosts, ports and user info that every reader reads the same stay accepted", arguments: [
        ("http://127.0.0.1:65535/v1", "http://127.0.0.1:65535/v1/posts"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1/posts"),
        ("http://[fe80::1%25eth0]/v1", "http://[fe80::1%25eth0]/v1/posts"),
        ("https://api.example.com:0/v1", "https://api.example.com:0/v1/posts"), // user-info is refused: RequestFieldValidationTests
        ("https://api-1.example_host.com./v1", "https://api-1.example_host.com./v1/posts"),
        ("https://api.example.com:/v1", "https://api.example.com/v1/posts"),
    ])
    func validAuthorities(base: String, expected: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts"))
        // Sent to the transport (which has no stub for it, so the request then fails there).
        #expect(!URLError.matches(probe.failure, .badURL), "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(transport.requests.first?.url?.absoluteString == expected)
    }

    // MARK: Loopback request parser (found by Fuzz/loopback-parser)

    private typealias Parser = LoopbackRequestParser

    /// What the parser makes of `message` when it arrives in reads ending at `cuts`, as a
    /// connection feeds it: "complete" (head and body), "rejected N" (the status) or "incomplete".
    private func verdict(_ message: [UInt8], readsEndingAt cuts: [Int] = []) -> String {
        var buffer: [UInt8] = []
        var start = 0
        for end in cuts + [message.count] {
            buffer += message[start..<end]
            start = end
            switch Parser.parseHead(buffer) {
            case .incomplete: continue
            case .invalid(let rejection): return "rejected \(rejection.status)"
            case .complete(let head):
                switch Parser.parseBody(buffer, head: head) {
                case .incomplete: continue
                case .invalid(let rejection): return "rejected \(rejection.status)"
                case .complete: return "complete"
                }
            }
        }
        return "incomplete"
    }

    private func filler(_ count: Int) -> [UInt8] {
        Array(repeating: UInt8(ascii: "a"), count: count)
    }

    @Test("a head whose end starts at the size limit is accepted however the bytes arrive")
    func headAtTheLimit() {
        let prefix = Array("GET / HTTP/1.1\r\nX: ".utf8)
        let message = prefix + filler(Parser.maxHeadBytes - prefix.count) + Array("\r\n\r\n".utf8)
        #expect(verdict(message) == "complete")
        for cut in message.count - 3..<message.count {
            #expect(verdict(message, readsEndingAt: [cut]) == "complete", "a read ending at \(cut)")
        }
    }

    @Test("trailers and a chunk-size line at their size limits are accepted however the bytes arrive")
    func chunkedLimits() {
        let head = Array("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let trailer = Array("0\r\nX: ".utf8) + filler(Parser.maxHeadBytes - 3) + Array("\r\n\r\n".utf8)
        let sizeLine = Array("0;".utf8) + filler(Parser.maxChunkLineBytes - 2) + Array("\r\n\r\n".utf8)
        for body in [trailer, sizeLine] {
            let message = head + body
            #expect(verdict(message) == "complete")
            for cut in message.count - 4..<message.count {
                #expect(verdict(message, readsEndingAt: [cut]) == "complete", "a read ending at \(cut)")
            }
        }
    }

    @Test("a head with bare LF endings is refused with 400 however long it is and however it arrives")
    func bareLineFeedsAndSize() {
        let message = Array("GET / HTTP/1.1\r\nA: 1\n\nB: ".utf8) + filler(Parser.maxHeadBytes + 10)
        #expect(verdict(message) == "rejected 400")
        #expect(verdict(message, readsEndingAt: [30]) == "rejected 400")
    }

    @Test("a request target with a control character is refused", arguments: ["/p\u{0F}", "/a\u{7F}b", "/\u{1B}[0m"])
    func controlCharacterInTarget(target: String) {
        #expect(verdict(Array("GET \(target) HTTP/1.1\r\n\r\n".utf8)) == "rejected 400")
    }

    // MARK: Redaction (found by Fuzz/redaction)

    @Test("user info is redacted wherever URL parsers read an authority", arguments: [
        ("//u:p@h:8080/x", "//***@h:8080/x"),                   // a network-path reference
        ("http:/user:pass@api.example.com/v1", "http:/***@api.example.com/v1"), // one slash: libcurl reads user:pass
        ("http:user:pass@api.example.com", "http:***@api.example.com"),
        ("https:///user:pass@h/", "https:///***@h/"),
    ])
    func userInfoOfLenientURLs(text: String, expected: String) {
        #expect(Redaction.redact(urlString: text) == expected)
    }

    @Test("a URL in text keeps no password when its user info has a character such as '{' or '|'")
    func userInfoWithRawCharactersInText() {
        #expect(Redaction.redactingURLs(in: "failed: https://a{b:pw@host/x?token=t (retrying)")
            == "failed: https://***@host/x?token=REDACTED (retrying)")
        #expect(Redaction.redactingURLs(in: "see <https://u|v:pw@h/>") == "see <https://***@h/>")
    }

    @Test("a combining mark after '=', '@', '&' or '?' does not hide a secret", arguments: [
        ("https://h/p?api_key=\u{301}secret", "https://h/p?api_key=REDACTED"),
        ("https://h/p?aKey=\u{6DA}ypApi-Key=2", "https://h/p?aKey=REDACTED"),
        ("https://user:pw@\u{301}host/", "https://***@\u{301}host/"),
        ("https://h/p?x=1&\u{301}&token=t", "https://h/p?x=1&\u{301}&token=REDACTED"),
    ])
    func combiningMarksAfterDelimiters(text: String, expected: String) {
        #expect(Redaction.redact(urlString: text) == expected)
    }

    // MARK: The table of built URLs (found while reading it for a fuzz target)

    /// Swift's `String` equality is canonical equivalence: "K" (U+212A KELVIN SIGN) equals "K" and
    /// ";" (U+037E GREEK QUESTION MARK) equals ";". A table keyed by `String` handed the URL built
    /// for one spelling to the other, which `URLBuilder` refuses (it is not ASCII).
    @Test("an endpoint canonically equal to one built before is still checked", arguments: [
        ("postsK", "posts\u{212A}"), ("a;b", "a\u{37E}b"),
    ])
    func builtURLsCompareBytes(built: String, lookalike: String) {
        let api = StubbedService(baseURL: "https://fuzz-regression.example/v1", transport: transport)
        _ = RequestProbe(api.get(endpoint: built))
        #expect(transport.requests.count == 1)
        let probe = RequestProbe(api.get(endpoint: lookalike))
        #expect(URLError.matches(probe.failure, .badURL), "\(lookalike.debugDescription) gave \(String(describing: probe.failure))")
        #expect(transport.requests.count == 1)
    }

    // MARK: Redirects (Fuzz/redirect-location)

    /// `URL.fragment` is percent-encoded, but the fragment a Location inherits went through
    /// `URLComponents.fragment`, which encodes what it is given: `#a%20b` became `#a%2520b`.
    @Test("a Location without a fragment inherits the original fragment byte for byte")
    func redirectInheritsFragmentUnchanged() throws {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/old").thenRespond(.status(301, headers: ["Location": "/new"]))
        transport.stub(.get, path: "/new").thenRespond(.text("new"))
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://fuzz-regression.example/old#a%20b%2Fc")!)))
        #expect(probe.values.first?.text == "new")
        #expect(transport.requests.last?.url?.absoluteString == "https://fuzz-regression.example/new#a%20b%2Fc")
    }

    // MARK: The test kit's multipart reader (Fuzz/multipart-parser)

    /// Header lines were split at the first colon *Character*: a colon followed by a combining
    /// mark is one Character that is not `:`, so `X:\u{301}y` was refused as a line without a
    /// colon, and in `A:\u{301}B: c` the name read as `A:\u{301}B`. RFC 5322 (and RFC 2046's part
    /// headers) end the name at the first colon byte; the mark belongs to the value.
    @Test("a header line whose colon is followed by a combining mark splits at that colon")
    func multipartHeaderColonBeforeCombiningMark() throws {
        let body = Data("--b\r\nX:\u{301}y\r\nA:\u{301}B: c\r\n\r\nv\r\n--b--".utf8)
        let parts = try MultipartFormDataParser.parse(body, boundary: "b")
        #expect(parts.first?.headers == [HTTPField(name: "X", value: "\u{301}y"), HTTPField(name: "A", value: "\u{301}B: c")])
        #expect(parts.first?.headers.map { Array($0.value.unicodeScalars) } == [["\u{301}", "y"], ["\u{301}", "B", ":", " ", "c"]])
        #expect(parts.first.map { String(decoding: $0.body, as: UTF8.self) } == "v")
    }

    /// A Content-Type's quoted parameter values were read to the next `"`, without RFC 9110's
    /// quoted-pairs (§5.6.4): in `title="a\";boundary=evil"; boundary=real` the quoted string
    /// ended at the escaped quote and the boundary read as `evil"`; `boundary="a\-b"` read as
    /// `a\-b`. Content-Disposition keeps reading a backslash as itself, as browsers send it.
    @Test("a quoted-pair in a Content-Type parameter neither ends the quoted string nor stays in the boundary")
    func multipartContentTypeQuotedPairs() throws {
        #expect(MultipartFormDataParser.boundary(fromContentType: #"multipart/form-data; title="a\";boundary=evil"; boundary=real"#) == "real")
        #expect(MultipartFormDataParser.boundary(fromContentType: #"multipart/form-data; path="C:\\"; boundary="a\-b""#) == "a-b")
        let body = Data("--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"C:\\dir\\x.txt\"\r\n\r\nv\r\n--b--".utf8)
        #expect(try MultipartFormDataParser.parse(body, boundary: "b").first?.filename == #"C:\dir\x.txt"#)
    }

    // MARK: Credential scopes (Fuzz/credential-scope)

    /// `127.0.0.09` was read as the loopback address 127.0.0.9, so a scope with
    /// `insecureHTTP: .loopbackOnly` sent its token over plain http to it; but libcurl (which sends
    /// the request on Linux) and the C resolver read an octet with a leading zero as octal, and
    /// `09` is no octal number: the host is a name, looked up in DNS. An octet with a leading zero
    /// is now refused, as `inet_pton` refuses it (libcurl reads `010` as 8, still loopback, but
    /// not the address the library read).
    @Test("http to a 127 address with a leading zero in an octet is not loopback", arguments: [
        "127.0.0.09", "127.08.0.1", "127.0.0.010", "127.000.0.1",
    ])
    func loopbackOctetsWithoutLeadingZeros(host: String) throws {
        let scope = CredentialScope(hosts: [host, "127.0.0.1"], insecureHTTP: .loopbackOnly)
        #expect(!scope.allows(try #require(URL(string: "http://\(host)/me"))))
        #expect(scope.allows(try #require(URL(string: "https://\(host)/me"))))
        #expect(scope.allows(try #require(URL(string: "http://127.0.0.1/me"))))
    }
}
