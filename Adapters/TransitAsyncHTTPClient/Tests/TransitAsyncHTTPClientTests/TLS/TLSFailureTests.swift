import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOSSL
import Signals
import Testing
@testable import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// TLS failures carry the codes Apple platforms give, on both transports, and host failover
/// moves on them. Every certificate is minted when the test runs (``TestCertificates``) and
/// served on loopback (``TLSTestServer``).
@Suite("TLS failures")
struct TLSFailureTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates()
    }

    /// An AsyncHTTPClient transport that trusts the test authority (and nothing else).
    private func trustingTransport() -> AsyncHTTPClientTransport {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([certificates.authority])
        configuration.tlsConfiguration = tls
        return AsyncHTTPClientTransport(configuration: configuration)
    }

    /// The error a client on `transport` fails with for a GET of `url`.
    private func failure(_ transport: any HTTPTransport, _ url: URL) async throws -> TransportError? {
        let client = Transit.HTTPClient(transport: transport)
        do {
            _ = try await client.send(URLRequest(url: url)).firstValue()
        } catch let error as TransportError {
            return error
        }
        Issue.record("the request did not fail")
        return nil
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func aServerIssuedByAConfiguredAuthorityIsTrusted(host: String) async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let transport = trustingTransport()
        defer { Task { try await transport.shutdown() } }
        let response = try await Transit.HTTPClient(transport: transport).send(URLRequest(url: server.url("/hello", host: host))).firstValue()
        #expect(response.statusCode == 200)
        #expect(response.text == TLSTestServer.body)
    }

    @Test(arguments: [
        (TestCertificates.Kind.selfSigned, URLError.Code.serverCertificateUntrusted),
        (.unknownRoot, .serverCertificateUntrusted),
        (.expired, .serverCertificateHasBadDate),
        (.notYetValid, .serverCertificateNotYetValid),
        (.wrongHost, .serverCertificateUntrusted),
    ])
    func asyncHTTPClientTransportGivesTheCertificateCodes(kind: TestCertificates.Kind, code: URLError.Code) async throws {
        let server = try TLSTestServer(identity: certificates.identity(kind))
        defer { server.stop() }
        let transport = trustingTransport()
        defer { Task { try await transport.shutdown() } }
        let error = try await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == code, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test(arguments: [
        // libcurl says which check failed; the test authority is unknown to it (Linux
        // URLSession takes no extra roots), so a chain ending at it has an unknown root.
        (TestCertificates.Kind.selfSigned, URLError.Code.serverCertificateUntrusted),
        (.unknownRoot, .serverCertificateHasUnknownRoot),
        (.valid, .serverCertificateHasUnknownRoot),
    ])
    func urlSessionTransportGivesTheCertificateCodes(kind: TestCertificates.Kind, code: URLError.Code) async throws {
        let server = try TLSTestServer(identity: certificates.identity(kind))
        defer { server.stop() }
        let error = try await failure(URLSessionTransport(), server.url("/secret"))
        #expect(error?.urlError?.code == code, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test func aHandshakeThatFailsForAnotherReasonIsASecureConnectionFailure() async throws {
        // The server speaks TLS 1.3 only, the client TLS 1.2 at most.
        let server = try TLSTestServer(identity: certificates.identity(.valid)) { $0.minimumTLSVersion = .tlsv13 }
        defer { server.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([certificates.authority])
        tls.maximumTLSVersion = .tlsv12
        configuration.tlsConfiguration = tls
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        defer { Task { try await transport.shutdown() } }
        let error = try await failure(transport, server.url("/"))
        #expect(error?.urlError?.code == .secureConnectionFailed, "\(String(describing: error))")
    }

    // MARK: Failover

    @Test(arguments: [TestCertificates.Kind.selfSigned, .expired, .wrongHost, .unknownRoot])
    func asyncHTTPClientTransportFailsOverOnACertificateFailure(kind: TestCertificates.Kind) async throws {
        let bad = try TLSTestServer(identity: certificates.identity(kind))
        defer { bad.stop() }
        let good = try TLSTestServer(identity: certificates.identity(.valid))
        defer { good.stop() }
        let transport = trustingTransport()
        defer { Task { try await transport.shutdown() } }
        let failover = HostFailover(origins: ["https://127.0.0.1:\(bad.port)", "https://127.0.0.1:\(good.port)"])
        let client = Transit.HTTPClient(transport: transport) { $0.failover = failover }
        var request = URLRequest(url: bad.url("/posts"))
        request.httpMethod = "POST"
        let response = try await client.send(request).firstValue()
        #expect(response.text == TLSTestServer.body)
        #expect(good.requestCount == 1)
        #expect(!failover.isHealthy("https://127.0.0.1:\(bad.port)", on: Transit.HTTPClient.timerQueue))
    }

    @Test func urlSessionTransportFailsOverOnACertificateFailure() async throws {
        let bad = try TLSTestServer(identity: certificates.identity(.selfSigned))
        defer { bad.stop() }
        // URLSession on Linux trusts no test authority: the healthy origin is plain HTTP.
        let good = LoopbackServer()
        try good.start()
        defer { good.stop() }
        good.enqueue(.text("from the backup"))
        let failover = HostFailover(origins: ["https://127.0.0.1:\(bad.port)", "http://127.0.0.1:\(good.port)"])
        let client = Transit.HTTPClient(transport: URLSessionTransport()) { $0.failover = failover }
        let response = try await client.send(URLRequest(url: bad.url("/posts"))).firstValue()
        #expect(response.text == "from the backup")
        #expect(!failover.isHealthy("https://127.0.0.1:\(bad.port)", on: Transit.HTTPClient.timerQueue))
    }
}
