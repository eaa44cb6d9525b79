import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOSSL
import Signals
import Testing
import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting
import X509

/// Pins on the AsyncHTTPClient transport: requests to a pinned host go over the transport's own
/// connections, whose handshake validates the chain and then matches the pins against the
/// validated chain. Every certificate is minted when the test runs (``TestCertificates``), every
/// pin computed here from the certificates' own bytes.
@Suite("Pinned server trust on AsyncHTTPClient")
struct PinnedServerTrustTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates()
    }

    // MARK: Helpers

    /// The pin of `certificate`'s DER.
    private static func certificatePin(_ certificate: Certificate) throws -> ServerTrustPolicy.Pin {
        .certificateDigest(Data(SHA256.hash(data: try certificate.serializeAsPEM().derBytes)))
    }

    /// The pin of `certificate`'s SubjectPublicKeyInfo (its P-256 key's DER, as CryptoKit
    /// writes it).
    private static func keyPin(_ certificate: Certificate) throws -> ServerTrustPolicy.Pin {
        let key = try #require(P256.Signing.PublicKey(certificate.publicKey))
        return .publicKeyDigest(Data(SHA256.hash(data: key.derRepresentation)))
    }

    /// A pin of a key no server has.
    private static func unrelatedPin() -> ServerTrustPolicy.Pin {
        .publicKeyDigest(Data(SHA256.hash(data: P256.Signing.PrivateKey().publicKey.derRepresentation)))
    }

    /// The test authority as a root of a rule.
    private var authorityRoot: [ServerTrustPolicy.Certificate] {
        get throws { try ServerTrustPolicy.Certificate.pem(certificates.authorityCertificate.serializeAsPEM().pemString) }
    }

    /// A transport whose rule for `host` has `pins`, and the test authority as a root unless
    /// `trustingAuthority` is false.
    private func transport(
        pins: [ServerTrustPolicy.Pin],
        host: String = "127.0.0.1",
        trustingAuthority: Bool = true,
        more: [ServerTrustPolicy.Rule] = []
    ) throws -> AsyncHTTPClientTransport {
        let rule = try ServerTrustPolicy.Rule(host: host, roots: trustingAuthority ? authorityRoot : [], pins: pins)
        return AsyncHTTPClientTransport(serverTrust: try ServerTrustPolicy([rule] + more))
    }

    /// The response to a GET of `url` on `transport`.
    private func get(_ transport: AsyncHTTPClientTransport, _ url: URL) async throws -> HTTPResponse {
        try await Transit.HTTPClient(transport: transport).send(URLRequest(url: url)).firstValue()
    }

    /// What a GET of `url` on `transport` fails with.
    private func failure(_ transport: AsyncHTTPClientTransport, _ url: URL) async -> TransportError? {
        do {
            _ = try await get(transport, url)
            Issue.record("the request did not fail")
        } catch let error as TransportError {
            return error
        } catch {
            Issue.record("\(error)")
        }
        return nil
    }

    /// Expects a response `200` with the test server's body from a GET of `url`.
    private func expectSuccess(_ transport: AsyncHTTPClientTransport, _ url: URL) async throws {
        let response = try await get(transport, url)
        #expect(response.statusCode == 200)
        #expect(response.text == TLSTestServer.body)
    }

    // MARK: Pins that match

    @Test func aPinnedLeafCertificateIsAccepted() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.certificatePin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello"))
        #expect(server.requestCount == 1)
        // The request went over the pinned path.
        #expect(transport.pinnedConnections.openedCount == 1)
    }

    @Test func aPinnedLeafPublicKeyIsAccepted() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello"))
    }

    @Test func aPinnedHostNameIsAccepted() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)], host: "localhost")
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello", host: "localhost"))
    }

    @Test func thePinnedPublicKeyOfTheRootIsAccepted() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(certificates.authorityCertificate)])
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello"))
    }

    @Test func thePinnedPublicKeyOfAnIntermediateIsAccepted() async throws {
        let identity = try certificates.identity(.viaIntermediate)
        let intermediate = try Certificate(derEncoded: identity.chain[1].toDERBytes())
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(intermediate)])
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello"))
    }

    @Test func aBackupPinLetsTheKeyRotate() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        // The first pin is of a key no server has (the one rotated away, or the next one).
        let transport = try transport(pins: [Self.unrelatedPin(), Self.keyPin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/hello"))
    }

    // MARK: Refusals: nothing is sent

    @Test func aValidChainThatMatchesNoPinIsRefusedBeforeAnythingIsSent() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        let transport = try transport(pins: [Self.unrelatedPin(), Self.unrelatedPin()])
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret?token=abc"))
        let refusal = error?.underlying as? ServerTrustError
        #expect(refusal == ServerTrustError(host: "127.0.0.1", reason: .pinMismatch), "\(String(describing: error))")
        #expect(refusal?.description.contains("abc") == false)
        #expect(server.requestCount == 0)
    }

    @Test func aPinnedCertificatePresentedButOutsideTheValidatedChainDoesNotMatch() async throws {
        // The server adds a certificate whose pin the rule has, but which takes no part in the
        // chain from its leaf to the trusted root.
        let decoyKey = P256.Signing.PrivateKey()
        let decoyName = try DistinguishedName { CommonName("Pinned Decoy") }
        let decoy = try TestCertificates.authority(name: decoyName, key: decoyKey)
        let valid = try certificates.identity(.valid)
        let identity = try TestCertificates.Identity(chain: valid.chain + [TestCertificates.nio(decoy)], key: valid.key, leaf: valid.leaf)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.certificatePin(decoy), Self.keyPin(decoy)])
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.underlying as? ServerTrustError == ServerTrustError(host: "127.0.0.1", reason: .pinMismatch), "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test func aMatchingPinDoesNotBypassValidation() async throws {
        // The leaf is pinned, but its authority is trusted neither by the system nor by the rule.
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.certificatePin(identity.leaf), Self.keyPin(identity.leaf)], trustingAuthority: false)
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: error))")
        let reason = error?.urlError?.userInfo[NSUnderlyingErrorKey] as? ServerTrustError
        #expect(reason == ServerTrustError(host: "127.0.0.1", reason: .untrusted))
        #expect(server.requestCount == 0)
    }

    @Test func aSelfSignedPinnedLeafIsUntrusted() async throws {
        let identity = try certificates.identity(.selfSigned)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: error))")
        #expect(server.requestCount == 0)
    }

    @Test(arguments: [
        (TestCertificates.Kind.expired, URLError.Code.serverCertificateHasBadDate),
        (.notYetValid, .serverCertificateNotYetValid),
        (.wrongHost, .serverCertificateUntrusted),
        (.unknownRoot, .serverCertificateUntrusted),
    ])
    func aPinnedLeafThatFailsValidationIsRefused(kind: TestCertificates.Kind, code: URLError.Code) async throws {
        let identity = try certificates.identity(kind)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        let transport = try transport(pins: [Self.certificatePin(identity.leaf), Self.keyPin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        #expect(error?.urlError?.code == code, "\(String(describing: error))")
        let reason = error?.urlError?.userInfo[NSUnderlyingErrorKey] as? ServerTrustError
        #expect(reason == ServerTrustError(host: "127.0.0.1", reason: .untrusted))
        #expect(server.requestCount == 0)
    }

    @Test func aRuleWhoseRootCannotBeReadFailsClosed() async throws {
        let server = try TLSTestServer(identity: certificates.identity(.valid))
        defer { server.stop() }
        // The outer shape of a certificate, holding nothing a certificate parser accepts.
        let unreadable = try ServerTrustPolicy.Certificate(der: Data([0x30, 0x03, 0x30, 0x01, 0x00]))
        let policy = try ServerTrustPolicy([
            .init(host: "127.0.0.1", roots: [unreadable], pins: [Self.unrelatedPin()]),
        ])
        let transport = AsyncHTTPClientTransport(serverTrust: policy)
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        let refusal = error?.underlying as? ServerTrustError
        #expect(refusal?.host == "127.0.0.1")
        guard case .notEnforceable(let name, let because)? = refusal?.reason else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(name == "AsyncHTTPClientTransport")
        #expect(because.contains("root certificate"))
        #expect(server.connectionCount == 0)
    }

    @Test func withAProxyAPinnedHostFailsClosed() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.proxy = .server(host: "127.0.0.1", port: 9)
        let policy = try ServerTrustPolicy([.init(host: "127.0.0.1", roots: authorityRoot, pins: [Self.keyPin(identity.leaf)])])
        let transport = AsyncHTTPClientTransport(configuration: configuration, serverTrust: policy)
        defer { Task { try await transport.shutdown() } }
        let error = await failure(transport, server.url("/secret"))
        guard case .notEnforceable(_, let because)? = (error?.underlying as? ServerTrustError)?.reason else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(because.contains("proxy"))
        #expect(server.connectionCount == 0)
    }

    // MARK: Routing, reuse, streaming

    @Test func aHostWithoutPinsStillGoesThroughAsyncHTTPClient() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity)
        defer { server.stop() }
        // 127.0.0.1 is pinned; localhost has the authority as a root only.
        let transport = try transport(
            pins: [Self.keyPin(identity.leaf)],
            more: [.init(host: "localhost", roots: authorityRoot)]
        )
        defer { Task { try await transport.shutdown() } }
        try await expectSuccess(transport, server.url("/plain", host: "localhost"))
        #expect(transport.pinnedConnections.openedCount == 0)
        try await expectSuccess(transport, server.url("/pinned"))
        #expect(transport.pinnedConnections.openedCount == 1)
        #expect(server.requestCount == 2)
    }

    @Test func aKeptAliveConnectionIsReused() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity, answer: .keepAlive)
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)])
        try await expectSuccess(transport, server.url("/first"))
        try await expectSuccess(transport, server.url("/second"))
        #expect(server.requestCount == 2)
        #expect(server.connectionCount == 1)
        #expect(transport.pinnedConnections.openedCount == 1)
        // Shutting the transport down closes the idle connection.
        try await transport.shutdown()
        #expect(await server.waitUntil { server.closedConnectionCount == 1 })
        #expect(transport.pinnedConnections.openCount == 0)
    }

    @Test func aStreamedBodyArrivesAsItComesAndCancellingClosesTheConnection() async throws {
        let identity = try certificates.identity(.valid)
        let first = 20_000
        let server = try TLSTestServer(identity: identity, answer: .stream(first: first))
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)])
        defer { Task { try await transport.shutdown() } }

        struct Received {
            var status: Int?
            var bytes = 0
            var completed = false
            var cancelled = false
            var afterCancel = 0
        }
        let received = NIOLockedValueBox(Received())
        let token = transport.exchange(TransportRequest(URLRequest(url: server.url("/stream")))).sink(
            receiveCompletion: { _ in
                received.withLockedValue { state in
                    state.completed = true
                    if state.cancelled { state.afterCancel += 1 }
                }
            },
            receiveValue: { part in
                received.withLockedValue { state in
                    if state.cancelled { state.afterCancel += 1 }
                    switch part {
                    case .head(let head): state.status = head.statusCode
                    case .body(let data): state.bytes += data.count
                    }
                }
            }
        )
        // The head and the first bytes arrive while the server holds the rest.
        let deadline = ContinuousClock.now + .seconds(60)
        while received.withLockedValue({ $0.bytes < first }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(received.withLockedValue { $0.status } == 200)
        #expect(received.withLockedValue { $0.bytes } == first)
        received.withLockedValue { $0.cancelled = true }
        token.cancel()
        #expect(await server.waitUntil { server.closedConnectionCount == 1 })
        #expect(received.withLockedValue { $0.afterCancel } == 0)
        #expect(received.withLockedValue { $0.completed } == false)
    }

    @Test func shuttingDownCancelsAPinnedRequestInFlight() async throws {
        let identity = try certificates.identity(.valid)
        let server = try TLSTestServer(identity: identity, answer: .stream(first: 1000))
        defer { server.stop() }
        let transport = try transport(pins: [Self.keyPin(identity.leaf)])
        let outcome = NIOLockedValueBox<(bytes: Int, failure: (any Error)?)>((0, nil))
        let token = transport.exchange(TransportRequest(URLRequest(url: server.url("/stream")))).sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion { outcome.withLockedValue { $0.failure = error } }
            },
            receiveValue: { part in
                if case .body(let data) = part { outcome.withLockedValue { $0.bytes += data.count } }
            }
        )
        #expect(await server.waitUntil { outcome.withLockedValue { $0.bytes } == 1000 })
        try await transport.shutdown()
        #expect(await server.waitUntil { outcome.withLockedValue { $0.failure } != nil })
        #expect((outcome.withLockedValue { $0.failure } as? URLError)?.code == .cancelled)
        #expect(await server.waitUntil { server.closedConnectionCount == 1 })
        withExtendedLifetime(token) {}
    }
}
