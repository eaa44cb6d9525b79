import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Signals
import Testing
@testable import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// The probe that tells why a certificate was rejected goes only where the request went: never
/// around a configured proxy, and never for long.
@Suite("Certificate diagnosis")
struct CertificateDiagnosisTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates()
    }

    /// Behind a proxy, a certificate failure is reported without a direct connection to the
    /// origin: the proxy sees the one tunnel the request asked for, the origin no connection.
    @Test func behindAProxyNoDirectConnectionIsOpened() async throws {
        let origin = try TLSTestServer(identity: certificates.identity(.expired))
        defer { origin.stop() }
        let proxy = try TunnelTerminatingProxy(identity: certificates.identity(.expired))
        defer { proxy.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([certificates.authority])
        configuration.tlsConfiguration = tls
        configuration.proxy = .server(host: "127.0.0.1", port: proxy.port)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        defer { Task { try await transport.shutdown() } }
        do {
            _ = try await Transit.HTTPClient(transport: transport).send(URLRequest(url: origin.url("/secret"))).firstValue()
            Issue.record("the request did not fail")
        } catch let error as TransportError {
            #expect(error.urlError?.code == .serverCertificateUntrusted, "\(error)")
        }
        #expect(proxy.tunnels == ["CONNECT 127.0.0.1:\(origin.port) HTTP/1.1"])
        #expect(origin.connectionCount == 0)
    }

    /// A server that accepts the probe's connection and never answers its handshake holds the
    /// failure back for a bounded time, then it is reported as untrusted. The probe's own bound is
    /// `CertificateDiagnosis.timeout` (2 s) from the connection attempt; the test allows 30 s from
    /// the call, which also makes a TLS context (reading the system's roots), because under the
    /// thread sanitizer on a loaded two-core machine that alone has taken seconds. A probe that
    /// waited for the server would never end.
    @Test func aProbeThatGetsNoAnswerEndsQuickly() async throws {
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        defer { silent.close(promise: nil) }
        let url = try #require(URL(string: "https://127.0.0.1:\(silent.localAddress?.port ?? 0)/"))
        let started = ContinuousClock.now
        let code = try await CertificateDiagnosis.code(
            for: url, tls: .makeClientConfiguration(), on: MultiThreadedEventLoopGroup.singleton.next()
        ).get()
        #expect(code == .serverCertificateUntrusted)
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}

/// An HTTP proxy on 127.0.0.1 that answers every `CONNECT` with `200` and then, instead of
/// tunnelling, ends the TLS handshake itself with `identity`: a certificate failure behind a
/// proxy, with no byte sent to the origin. ``tunnels`` lists the `CONNECT` lines it received.
final class TunnelTerminatingProxy: Sendable {
    private let channel: any Channel
    private let lines: NIOLockedValueBox<[String]>

    init(identity: TestCertificates.Identity) throws {
        let context = try NIOSSLContext(configuration: .makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) }, privateKey: .privateKey(identity.key)
        ))
        let lines = NIOLockedValueBox<[String]>([])
        self.lines = lines
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Terminator(context: context, lines: lines))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
    }

    /// The port it listens on.
    var port: Int { channel.localAddress?.port ?? 0 }

    /// The request lines of the `CONNECT`s it received.
    var tunnels: [String] { lines.withLockedValue { $0 } }

    func stop() {
        try? channel.close().wait()
    }

    private final class Terminator: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let context: NIOSSLContext
        let lines: NIOLockedValueBox<[String]>
        var received = ""

        init(context: NIOSSLContext, lines: NIOLockedValueBox<[String]>) {
            self.context = context
            self.lines = lines
        }

        func channelRead(context channelContext: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received += buffer.readString(length: buffer.readableBytes) ?? ""
            guard let end = received.range(of: "\r\n\r\n") else { return }
            let line = String(received[..<end.lowerBound].split(separator: "\r\n").first ?? "")
            lines.withLockedValue { $0.append(line) }
            channelContext.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")), promise: nil)
            do {
                try channelContext.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context), position: .after(self))
            } catch {
                channelContext.close(promise: nil)
            }
            channelContext.pipeline.syncOperations.removeHandler(context: channelContext, promise: nil)
        }
    }
}
