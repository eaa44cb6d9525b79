import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Why a server's certificate was rejected, when BoringSSL said only that it was
/// (`CERTIFICATE_VERIFY_FAILED`): one more TLS handshake with the server, which records the
/// certificates it presents and then refuses them, so the dates can be read.
///
/// - a certificate of the chain has expired → `.serverCertificateHasBadDate`;
/// - one is not valid yet → `.serverCertificateNotYetValid`;
/// - otherwise (self-signed, unknown authority, another host, the probe failed or timed out) →
///   `.serverCertificateUntrusted`.
///
/// Runs only after a request failed on the certificate, and only where the request connected
/// directly: behind a configured proxy no probe is made (it would bypass the proxy), and the
/// failure is `.serverCertificateUntrusted`. The probe sends no request byte, and connecting and
/// the handshake together take at most ``timeout``: the failure is held back no longer.
enum CertificateDiagnosis {
    /// The longest the probe may take, connection and handshake together, before the failure is
    /// reported as untrusted. The server has just answered a handshake: one more is quick.
    static let timeout: TimeAmount = .seconds(2)

    /// The code for the certificate the server at `url` presents.
    static func code(for url: URL, tls: TLSConfiguration, on loop: any EventLoop) -> EventLoopFuture<URLError.Code> {
        guard let host = url.host, !host.isEmpty, let context = try? NIOSSLContext(configuration: tls) else {
            return loop.makeSucceededFuture(.serverCertificateUntrusted)
        }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let port = url.port ?? 443
        // Server Name Indication names hosts, never addresses.
        let isAddress = (try? SocketAddress(ipAddress: bareHost, port: port)) != nil
        let chain = NIOLockedValueBox<[NIOSSLCertificate]>([])
        let deadline = NIODeadline.now() + timeout
        return ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context,
                        serverHostname: isAddress ? nil : bareHost,
                        customVerificationCallback: { certificates, verdict in
                            chain.withLockedValue { $0 = certificates }
                            verdict.succeed(.failed)
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: bareHost, port: port)
            .flatMap { channel in
                // The refused handshake closes the channel; a server that stalls is cut off when
                // the probe's time, connection included, is up.
                let cutOff = loop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
                return channel.closeFuture.always { _ in cutOff.cancel() }
            }
            .map { _ in code(for: chain.withLockedValue { $0 }, now: time(nil)) }
            .recover { _ in code(for: chain.withLockedValue { $0 }, now: time(nil)) }
    }

    /// The code for a rejected `chain` (leaf first) at `now`.
    static func code(for chain: [NIOSSLCertificate], now: time_t) -> URLError.Code {
        for certificate in chain {
            if certificate.notValidAfter < now { return .serverCertificateHasBadDate }
            if certificate.notValidBefore > now { return .serverCertificateNotYetValid }
        }
        return .serverCertificateUntrusted
    }
}
