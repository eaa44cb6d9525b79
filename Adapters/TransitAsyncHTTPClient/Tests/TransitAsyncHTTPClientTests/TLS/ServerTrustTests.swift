import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOSSL
import Signals
import Testing
import Transit
import TransitAsyncHTTPClient
import TransitTesting
import X509

/// A ``ServerTrustPolicy`` on the AsyncHTTPClient transport: a private authority trusted for one
/// host, pins that match nothing refused before anything is sent, and the https → http redirect refused end to end.
/// Every certificate is minted when the test runs (``TestCertificates``).
@Suite("Server trust on AsyncHTTPClient")
struct ServerTrustTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates()
    }

    /// The test authority as PEM text.
    private var authorityPEM: String {
        get throws { try certificates.authorityCertificate.serializeAsPEM().pemString }
    }

    /// A transport trusting the system's roots, and the test authority for `host` only.
    private func transport(trustingFor host: String) throws -> AsyncHTTPClientTransport {
        let policy = try ServerTrustPolicy([.init(host: host, roots: ServerTrustPolicy.Certificate.pem(authorityPEM))])
        return AsyncHTTPClientTransport(serverTrust: policy)
    }

    /// What a GET of `url` on `transport` fails with.
    private func failure(_ transport: AsyncHTTPClientTransport, _ url: URL) async -> TransportError? {
        do {
            _ = try await Transit.HTTPClient(transport: transport).send(URLRequest(url: url)).firstValue()
            Issue.record("the request did not fail")
        } catch let error as TransportError {
            return error
        } catch {
            Issue.record("\(error)")
        }
        return nil
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func aPrivateAuthorityTrustedThroughThePolicyIsTrusted(host: String) async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let transport = try transport(trustingFor: host)
        defer { Task { try await transport.shutdown() } }
        let response = try await Transit.HTTPClient(transport: transport).send(URLRequest(url: server.url("/hello", host: host))).firstValue()
        #expect(response.statusCode == 200)
        #expect(response.text == TLSTestServer.body)
    }

    @Test func withoutThePolicyTheSameServerIsUntrusted() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test func thePolicyOfAnotherHostDoesNotApply() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        // The authority is trusted for localhost; the request goes to 127.0.0.1.
        let transport = try transport(trustingFor: "localhost")
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret", host: "127.0.0.1"))
        #expect(error?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test(arguments: [
        (TestCertificates.Kind.expired, URLError.Code.serverCertificateHasBadDate),
        (.notYetValid, .serverCertificateNotYetValid),
        (.wrongHost, .serverCertificateUntrusted),
        (.unknownRoot, .serverCertificateUntrusted),
        (.selfSigned, .serverCertificateUntrusted),
    ])
    func aCoveredHostKeepsTheCertificateCodes(kind: TestCertificates.Kind, code: URLError.Code) async throws {
        let server = try TLSTestServer(identity: certificates.identity(kind))
        defer { server.stop() }
        let transport = try transport(trustingFor: "127.0.0.1")
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == code, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test func aRuleWithPinsThatDoNotMatchFailsBeforeAnythingIsSent() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let policy = try ServerTrustPolicy([
            .init(host: "127.0.0.1", roots: ServerTrustPolicy.Certificate.pem(authorityPEM), pins: [
                .publicKey(sha256: "Z6+L0oCeEL4C5qnGLNCsvKILCxDUDYxGBEOT6q4c3Uc="),
            ]),
        ])
        let transport = AsyncHTTPClientTransport(serverTrust: policy)
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret?token=abc"))
        let refusal = error?.underlying as? ServerTrustError
        #expect(refusal?.host == "127.0.0.1")
        guard case .pinMismatch? = refusal?.reason else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(refusal?.description.contains("abc") == false)
        #expect(server.requestCount == 0)
    }

    @Test func aPlainHTTPRequestToACoveredHostIsNotSent() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("never"))
        let transport = try transport(trustingFor: "127.0.0.1")
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, URL(string: "http://127.0.0.1:\(server.port)/")!)
        #expect(error?.underlying as? ServerTrustError == ServerTrustError(host: "127.0.0.1", reason: .notEncrypted))
        #expect(server.requests.isEmpty)
    }

    /// A request to another spelling of a covered address is refused as one to the address:
    /// the transport reads the policy's one normal form of hosts.
    @Test(arguments: ["127.1", "2130706433", "0x7f.0.0.1", "127.000.000.001", "[::ffff:127.0.0.1]"])
    func aPlainHTTPRequestToAnotherSpellingOfACoveredAddressIsNotSent(spelling: String) async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.text("never"))
        let transport = try transport(trustingFor: "127.0.0.1")
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, try #require(URL(string: "http://\(spelling):\(server.port)/")))
        #expect((error?.underlying as? ServerTrustError)?.reason == .notEncrypted, "\(spelling)")
        #expect(server.requests.isEmpty)
    }

    @Test func anHTTPSToHTTPRedirectIsRefusedEndToEnd() async throws {
        let plain = LoopbackServer()
        try plain.start()
        defer { plain.stop() }
        plain.enqueue(.text("in the clear"))
        let secure = try TLSTestServer(identity: certificates.identity(.valid), redirect: "http://127.0.0.1:\(plain.port)/landing")
        defer { secure.stop() }
        let transport = try transport(trustingFor: "localhost")
        defer { Task { try await transport.shutdown() } }
        do {
            _ = try await Transit.HTTPClient(transport: transport).send(URLRequest(url: secure.url("/start", host: "localhost"))).firstValue()
            Issue.record("the redirect was followed")
        } catch {
            guard case .insecureRedirect? = error as? RedirectError else {
                Issue.record("\(error)")
                return
            }
        }
        #expect(secure.requestCount == 1)
        #expect(plain.requests.isEmpty)
    }
}
