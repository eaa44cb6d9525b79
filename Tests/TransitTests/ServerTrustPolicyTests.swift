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

    @Test func anUncoveredHostIsSentAsWithoutAPolicy() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("hello"))
        let transport = URLSessionTransport(serverTrust: try ServerTrustPolicy([
            .init(host: "localhost", pins: [.publicKey(sha256: "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc=")]),
            // A wildcard never covers an IP address.
            .init(host: "*.0.0.1"),
        ]))
        #expect(transport.serverTrust?.rules.count == 2)
        let response = try await HTTPClient(transport: transport).send(URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/")!)).firstValue()
        #expect(response.text == "hello")
        #expect(server.requests.count == 1)
    }
}
