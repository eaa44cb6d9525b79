import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOSSL
import SwiftASN1
import Transit
import X509

/// The check of a server's certificate chain for a host whose ``ServerTrustPolicy`` rule has pins,
/// run inside the TLS handshake (NIOSSL's custom verification callback), so that a failure ends
/// the handshake before any request byte is written.
///
/// 1. The presented chain is validated in full with swift-certificates' `Verifier`: trusted roots
///    are the transport's (its `TLSConfiguration`'s `trustRoots`, the system's by default, and its
///    `additionalTrustRoots`) and the rule's; the policy is RFC 5280 (dates, constraints) and the
///    server's identity (its host name, or its IP address); the certificates after the leaf serve
///    as intermediates.
/// 2. The pins are matched against the **validated** chain only (leaf, intermediates, root): a
///    certificate pin against the SHA-256 of a certificate's DER, a public-key pin against the
///    SHA-256 of its SubjectPublicKeyInfo DER. Any pin matching any certificate passes. A
///    certificate the server presents but that is not part of the validated chain never matches.
struct PinVerifier: Sendable {
    /// What the check found.
    enum Verdict: Sendable, Equatable {
        /// The chain is valid and a pin matches.
        case trusted
        /// The chain is valid, no pin matches.
        case pinMismatch
        /// The chain does not validate; the code says why as the transport's error table does
        /// (a bad date, or untrusted).
        case untrusted(URLError.Code)
    }

    /// The roots the chain must lead to.
    let roots: CertificateStore
    /// The rule's pins.
    let pins: [ServerTrustPolicy.Pin]

    /// A verifier for `rule`, trusting `tls`'s roots and the rule's. Throws when a root cannot be
    /// read.
    init(rule: ServerTrustPolicy.Rule, tls: TLSConfiguration) throws {
        var store: CertificateStore
        var extra: [Certificate] = []
        switch tls.trustRoots {
        case .default?, nil:
            store = CertificateStore.systemTrustRoots
        case .certificates(let certificates)?:
            store = CertificateStore()
            extra += try certificates.map(Self.certificate)
        case .file(let path)?:
            store = CertificateStore()
            extra += try Self.certificates(atPath: path)
        }
        for additional in tls.additionalTrustRoots {
            switch additional {
            case .certificates(let certificates): extra += try certificates.map(Self.certificate)
            case .file(let path): extra += try Self.certificates(atPath: path)
            }
        }
        extra += try rule.roots.map { try Certificate(derEncoded: Array($0.der)) }
        store.append(contentsOf: extra)
        roots = store
        pins = rule.pins
    }

    /// A NIOSSL certificate in swift-certificates' form.
    static func certificate(_ certificate: NIOSSLCertificate) throws -> Certificate {
        try Certificate(derEncoded: certificate.toDERBytes())
    }

    /// The PEM certificates of a file, or of every file of a directory (unreadable files of a
    /// directory are skipped, as OpenSSL's hashed directories hold other files too).
    private static func certificates(atPath path: String) throws -> [Certificate] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return try NIOSSLCertificate.fromPEMFile(path).map(certificate)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        return names.flatMap { name in
            (try? NIOSSLCertificate.fromPEMFile(path + "/" + name).map(certificate)) ?? []
        }
    }

    /// The verdict on `presented` (leaf first), offered by the server at `host` (a name, or an IP
    /// address without brackets). The code of a chain that fails comes from its dates
    /// (``CertificateDiagnosis/code(for:now:)``).
    func verify(_ presented: [NIOSSLCertificate], host: String) async -> Verdict {
        guard let first = presented.first, let leaf = try? Self.certificate(first) else {
            return .untrusted(.serverCertificateUntrusted)
        }
        let intermediates = presented.dropFirst().compactMap { try? Self.certificate($0) }
        let isAddress = host.contains(":") || host.allSatisfy { $0 == "." || $0.isASCII && $0.isNumber }
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: isAddress ? nil : host, serverIP: isAddress ? host : nil)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates))
        switch result {
        case .validCertificate(let chain):
            return matches(Array(chain)) ? .trusted : .pinMismatch
        case .couldNotValidate:
            return .untrusted(CertificateDiagnosis.code(for: presented, now: time(nil)))
        }
    }

    /// Whether a pin matches a certificate of `chain` (a validated chain).
    func matches(_ chain: [Certificate]) -> Bool {
        for certificate in chain {
            for pin in pins {
                switch pin {
                case .certificateDigest(let digest):
                    if let der = try? Self.der(certificate), Data(SHA256.hash(data: der)) == digest { return true }
                case .publicKeyDigest(let digest):
                    if let spki = try? Self.der(certificate.publicKey), Data(SHA256.hash(data: spki)) == digest { return true }
                }
            }
        }
        return false
    }

    /// The DER encoding of `value` (a certificate, or a public key as its SubjectPublicKeyInfo).
    static func der(_ value: some DERSerializable) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(value)
        return serializer.serializedBytes
    }
}
