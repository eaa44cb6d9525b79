import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Transit
import TransitTesting

/// The server-trust policy as a value: host matching, PEM and DER input, pins; and
/// `URLSessionTransport` failing closed for covered hosts where it cannot enforce the policy.
@Suite("Server trust policy")
struct ServerTrustPolicyTests {
    static let first = """
-----BEGIN CERTIFICATE-----
MIIBiDCCAS2gAwIBAgIUSXDRKtLGjJApKfQeM92MswH0oVEwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOVHJhbnNpdCBUZXN0IEEwHhcNMjYxMTI2MDAzOTIzWhcNMzYx
MTIzMDAzOTIzWjAZMRcwFQYDVQQDDA5UcmFuc2l0IFRlc3QgQTBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABK3rQLvjoLFeSt1cB1VhUss/+IwKaza+z499kXBn2cSE
ehncpZbpgCwtpEJzUNPhbWxU0aQYLrSLQGbZthietuGjUzBRMB0GA1UdDgQWBBTA
wAz+XZ+syh9rQ2aYthJiyTWGjTAfBgNVHSMEGDAWgBTAwAz+XZ+syh9rQ2aYthJi
yTWGjTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQC58MsH9DZ+
/Vr1guGeFZvRJ44mKnK8STjceMDS5rCYuwIhAPgWID9zUnGYiQTyG6liZ1cEpFQF
xCeR0oW0agxjFoe7
-----END CERTIFICATE-----
"""
    static let second = """
-----BEGIN CERTIFICATE-----
MIIBhzCCAS2gAwIBAgIUKrz0jviMnP/h3ZlMZrXRKvZwwWQwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOVHJhbnNpdCBUZXN0IEIwHhcNMjYxMTI2MDAzOTIzWhcNMzYx
MTIzMDAzOTIzWjAZMRcwFQYDVQQDDA5UcmFuc2l0IFRlc3QgQjBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABPIecrFasko/vq9cHDZ2Wf12b9y/TU+KffC47h+8VOYl
Rwmj/eG/V84nz5hQLPE7mE7Hvy06IKEg4FFsFr/8tAejUzBRMB0GA1UdDgQWBBTk
VME9pnAkhj5MZNuKJJk+7t9XqTAfBgNVHSMEGDAWgBTkVME9pnAkhj5MZNuKJJk+
7t9XqTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQDfcdNMn+xe
qwpYR9Q7fzGafnjYopkhexd/V0y+hZVZsAIgXocBOed4MgCdYO1yqy+ulKBjnrsM
D7gj/1SsB8pkNm4=
-----END CERTIFICATE-----
"""

    // MARK: Hosts

    @Test func aWildcardCoversExactlyOneLabel() throws {
        let policy = try ServerTrustPolicy([.init(host: "*.example.com")])
        #expect(policy.rule(for: "a.example.com")?.host == "*.example.com")
        #expect(policy.rule(for: "A.Example.COM.")?.host == "*.example.com")
        #expect(policy.rule(for: "example.com") == nil)
        #expect(policy.rule(for: "a.b.example.com") == nil)
        #expect(policy.rule(for: "aexample.com") == nil)
        #expect(policy.rule(for: "a.example.org") == nil)
    }

    @Test func anExactRuleWinsOverAWildcard() throws {
        let policy = try ServerTrustPolicy([
            .init(host: "*.example.com"),
            .init(host: "API.example.com.", pins: [.publicKey(sha256: "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc=")]),
        ])
        #expect(policy.rule(for: "api.example.com")?.host == "api.example.com")
        #expect(policy.rule(for: "www.example.com")?.host == "*.example.com")
        #expect(policy.rule(for: "localhost") == nil)
    }

    @Test func anIPAddressIsMatchedExactly() throws {
        let policy = try ServerTrustPolicy([.init(host: "127.0.0.1"), .init(host: "[::1]")])
        #expect(policy.rule(for: "127.0.0.1") != nil)
        #expect(policy.rule(for: "::1") != nil)
        #expect(policy.rule(for: "127.0.0.2") == nil)
    }

    /// Every spelling of an IPv4 address that WHATWG's URL host parser (and the system's
    /// resolver) accepts, and its IPv4-mapped IPv6 form, is the address: a rule for it covers
    /// them all, and a rule written in any of them covers the dotted-decimal form.
    @Test(arguments: [
        "127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f.0.0.1", "0X7F.0.0.1", "0x7f000001", "127.000.000.001",
        "0177.0.0.1", "017700000001", "127.0.0.1.", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "[::FFFF:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
    ])
    func everySpellingOfAnIPv4AddressIsTheAddress(spelling: String) throws {
        let policy = try ServerTrustPolicy([.init(host: "127.0.0.1")])
        #expect(policy.rule(for: spelling)?.host == "127.0.0.1", "\(spelling)")
        let written = try ServerTrustPolicy([.init(host: spelling)])
        #expect(written.rules.first?.host == "127.0.0.1")
        #expect(written.rule(for: "127.0.0.1") != nil)
        #expect(policy.rule(for: "127.0.0.2") == nil)
        #expect(policy.rule(for: "127.0.0.1.example") == nil)
    }

    /// IPv6 addresses are compared in one form (RFC 5952: lower case, zeros compressed).
    @Test func anIPv6AddressIsMatchedInAnySpelling() throws {
        let policy = try ServerTrustPolicy([.init(host: "[2001:DB8:0:0:0:0:0:1]")])
        #expect(policy.rules.first?.host == "2001:db8::1")
        for spelling in ["2001:db8::1", "[2001:0db8::0001]", "2001:db8:0::0:1"] {
            #expect(policy.rule(for: spelling) != nil, "\(spelling)")
        }
        #expect(policy.rule(for: "2001:db8::2") == nil)
    }

    /// A rule written in Unicode is kept in its ASCII (IDNA, punycode) form, the form URL hosts
    /// arrive in, and matches either spelling; so does a wildcard.
    @Test func aUnicodeRuleMatchesItsASCIIForm() throws {
        let policy = try ServerTrustPolicy([.init(host: "Bücher.test"), .init(host: "*.münchen.test")])
        #expect(policy.rules.map(\.host) == ["xn--bcher-kva.test", "*.xn--mnchen-3ya.test"])
        #expect(policy.rule(for: "xn--bcher-kva.test")?.host == "xn--bcher-kva.test")
        #expect(policy.rule(for: "XN--BCHER-KVA.TEST.")?.host == "xn--bcher-kva.test")
        #expect(policy.rule(for: "bücher.test")?.host == "xn--bcher-kva.test")
        #expect(policy.rule(for: "BÜCHER。test")?.host == "xn--bcher-kva.test")
        #expect(policy.rule(for: "api.xn--mnchen-3ya.test")?.host == "*.xn--mnchen-3ya.test")
        #expect(policy.rule(for: "bucher.test") == nil)
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy([.init(host: "bücher.test"), .init(host: "xn--bcher-kva.test")]) }
    }

    /// RFC 3492's own examples (section 7.1), encoded as written.
    @Test(arguments: [
        ("\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}\u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}", "egbpdaj6bu4bxfgehfvwxn"),
        ("\u{4ED6}\u{4EEC}\u{4E3A}\u{4EC0}\u{4E48}\u{4E0D}\u{8BF4}\u{4E2D}\u{6587}", "ihqwcrb4cv8a8dqg056pqjye"),
        ("3\u{5E74}B\u{7D44}\u{91D1}\u{516B}\u{5148}\u{751F}", "3B-ww4c5e180e575a65lsy2b"),
        ("\u{305D}\u{306E}\u{30B9}\u{30D4}\u{30FC}\u{30C9}\u{3067}", "d9juau41awczczp"),
        ("-> $1.00 <-", "-> $1.00 <--"),
    ])
    func punycodeEncodesRFC3492sExamples(label: String, encoded: String) {
        #expect(Punycode.encode(label) == encoded)
    }

    /// A rule that can never match a request's host is refused when it is made: an address
    /// WHATWG's parser refuses (a part out of range, a name that ends in a number but is no
    /// address), a wildcard over an address, characters no host has, a label longer than 63
    /// bytes once encoded.
    @Test(arguments: [
        "1.2.3.256", "256.0.0.1", "0x100.0.0.1", "1.2.3.4.5", "*.0.0.1", "example.123", "a^b.test", "a<b.test", "a:b",
        "[::1", "[1::2::3]", "[::ffff:1.2.3.256]", String(repeating: "ü", count: 60) + ".test",
    ])
    func aRuleThatCanNeverMatchIsRefused(host: String) {
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Rule(host: host) }
    }

    @Test(arguments: ["", ".", "a..b", "*", "*.com", "a.*.example.com", "*a.example.com", "**.example.com", "a b.com", "user@host"])
    func aMalformedHostIsRefused(host: String) {
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Rule(host: host) }
    }

    @Test func twoRulesForOneHostAreRefused() throws {
        let error = #expect(throws: ServerTrustPolicy.InputError.self) {
            try ServerTrustPolicy([.init(host: "a.example.com"), .init(host: "A.example.com")])
        }
        #expect(error?.description.contains("a.example.com") == true)
    }

    // MARK: Certificates

    @Test func onePEMCertificateIsRead() throws {
        let certificates = try ServerTrustPolicy.Certificate.pem(Self.first)
        #expect(certificates.count == 1)
        #expect(certificates[0].der.first == 0x30)
        #expect(try ServerTrustPolicy.Certificate(der: certificates[0].der) == certificates[0])
    }

    @Test func severalPEMCertificatesAreRead() throws {
        let text = "subject=CN = Transit Test A\n" + Self.first + "\r\n\r\n" + Self.second + "\n"
        let certificates = try ServerTrustPolicy.Certificate.pem(text)
        #expect(certificates.count == 2)
        #expect(certificates[0] != certificates[1])
    }

    @Test(arguments: [
        "",
        "not a certificate",
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----",
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
        "-----END CERTIFICATE-----",
        "-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----",
    ])
    func garbageIsRefused(text: String) {
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Certificate.pem(text) }
    }

    @Test func truncatedBase64IsRefused() throws {
        var lines = Self.first.split(separator: "\n").map(String.init)
        // The last line of base64 loses characters: not a multiple of four any more.
        lines[lines.count - 2].removeLast(3)
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Certificate.pem(lines.joined(separator: "\n")) }
        // A whole line lost: the base64 decodes, the DER is short.
        var short = Self.first.split(separator: "\n").map(String.init)
        short.remove(at: 2)
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Certificate.pem(short.joined(separator: "\n")) }
        // A block without its end.
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Certificate.pem(String(Self.first.dropLast(10))) }
    }

    @Test func malformedDERIsRefused() throws {
        let der = try ServerTrustPolicy.Certificate.pem(Self.first)[0].der
        for bad in [Data(), Data([0x30]), Data([0x30, 0x00]), Data([0x04, 0x02, 0x30, 0x00]), der.dropLast(), der + Data([0]), Data([0x30, 0x89, 1, 1, 1, 1, 1, 1, 1, 1, 1])] {
            #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Certificate(der: Data(bad)) }
        }
    }

    // MARK: Pins

    @Test func pinsAreBase64SHA256Digests() throws {
        let pin = try ServerTrustPolicy.Pin.publicKey(sha256: "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc=")
        guard case let .publicKeyDigest(digest) = pin else { Issue.record("not a key pin"); return }
        #expect(digest.count == 32)
        #expect(try ServerTrustPolicy.Pin.publicKey(sha256: "sha256/Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc=") == pin)
        let certificate = try ServerTrustPolicy.Pin.certificate(sha256: " YpG55Bxmt/7ztGKPzu9yOsqRO1699Jz6NO8nkDAVQaQ=\n")
        guard case .certificateDigest = certificate else { Issue.record("not a certificate pin"); return }
    }

    @Test(arguments: ["", "sha256/", "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3U", "AAAA", "not base64 at all!", Data(count: 48).base64EncodedString()])
    func aMalformedPinIsRefused(text: String) {
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Pin.publicKey(sha256: text) }
        #expect(throws: ServerTrustPolicy.InputError.self) { try ServerTrustPolicy.Pin.certificate(sha256: text) }
    }

    // MARK: Errors

    @Test func theErrorNamesTheHostAndTheReasonOnly() {
        let error = ServerTrustError(host: "api.example.com", reason: .pinMismatch)
        #expect(error.description.contains("api.example.com"))
        #expect(error.localizedDescription == error.description)
        let refused = ServerTrustError(host: "a.example.com", reason: .notEnforceable(transport: "T", because: "no hook"))
        #expect(refused.description.contains("no hook"))
        #expect(refused.description.contains("not sent"))
    }

    // MARK: URLSessionTransport

    /// A request the client sends to `url` on `transport`, and the error it fails with.
    private func failure(_ transport: URLSessionTransport, _ url: URL) async -> ServerTrustError? {
        do {
            _ = try await HTTPClient(transport: transport).send(URLRequest(url: url)).firstValue()
            Issue.record("the request did not fail")
            return nil
        } catch let error as TransportError {
            return error.underlying as? ServerTrustError
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    #if canImport(FoundationNetworking)
    @Test func onLinuxACoveredHostFailsClosedBeforeAnyConnection() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("never"))
        let transport = URLSessionTransport(serverTrust: try ServerTrustPolicy([.init(host: "127.0.0.1", roots: ServerTrustPolicy.Certificate.pem(Self.first))]))
        let error = await failure(transport, URL(string: "https://127.0.0.1:\(server.port)/secret?token=abc")!)
        #expect(error?.host == "127.0.0.1")
        guard case .notEnforceable? = error?.reason else { Issue.record("\(String(describing: error))"); return }
        #expect(error?.description.contains("secret") == false)
        #expect(error?.description.contains("abc") == false)
        #expect(server.requests.isEmpty)
        #expect(transport.activeTaskCount == 0)
    }
    #endif

    @Test func aPlainHTTPRequestToACoveredHostIsNotSent() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("never"))
        let transport = URLSessionTransport(serverTrust: try ServerTrustPolicy([.init(host: "127.0.0.1")]))
        let error = await failure(transport, URL(string: "http://127.0.0.1:\(server.port)/")!)
        #expect(error == ServerTrustError(host: "127.0.0.1", reason: .notEncrypted))
        #expect(server.requests.isEmpty)
    }

    /// A request to another spelling of a covered address is refused as one to the address.
    @Test(arguments: ["127.1", "2130706433", "0x7f.0.0.1", "127.000.000.001", "[::ffff:127.0.0.1]"])
    func aPlainHTTPRequestToAnotherSpellingOfACoveredAddressIsNotSent(spelling: String) async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("never"))
        let transport = URLSessionTransport(serverTrust: try ServerTrustPolicy([.init(host: "127.0.0.1")]))
        let error = await failure(transport, try #require(URL(string: "http://\(spelling):\(server.port)/")))
        #expect(error?.reason == .notEncrypted, "\(spelling)")
        #expect(server.requests.isEmpty)
    }

    @Test func anUncoveredHostIsSentAsWithoutAPolicy() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("hello"))
        let transport = URLSessionTransport(serverTrust: try ServerTrustPolicy([
            .init(host: "localhost", pins: [.publicKey(sha256: "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc=")]),
            // A wildcard never covers an IP address.
            .init(host: "*.example.test"),
        ]))
        #expect(transport.serverTrust?.rules.count == 2)
        let response = try await HTTPClient(transport: transport).send(URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/")!)).firstValue()
        #expect(response.text == "hello")
        #expect(server.requests.count == 1)
    }
}
