import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// Certificates minted when a test runs: a certificate authority, and server identities issued by
/// it (or by themselves) for `127.0.0.1` and `localhost`, valid or not.
///
/// ```swift
/// let certificates = try TestCertificates()
/// let server = try TLSTestServer(identity: certificates.identity(.valid))
/// var tls = TLSConfiguration.makeClientConfiguration()
/// tls.trustRoots = .certificates([certificates.authority])
/// ```
///
/// Every key is a fresh P-256 key; nothing is read from or written to disk.
struct TestCertificates: Sendable {
    /// A server's certificate chain (leaf first) and private key, as NIOSSL takes them.
    struct Identity: Sendable {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        /// The leaf, for checks.
        let leaf: Certificate
    }

    /// What is wrong with a server identity, if anything.
    enum Kind: Sendable, CaseIterable {
        /// Issued by the authority, valid now, for 127.0.0.1 and localhost.
        case valid
        /// Issued by itself.
        case selfSigned
        /// Issued by the authority, expired yesterday.
        case expired
        /// Issued by the authority, valid from tomorrow.
        case notYetValid
        /// Issued by the authority for another host (`wrong-host.example`) only.
        case wrongHost
        /// Issued by another authority, that no client trusts, which the server sends along with
        /// the leaf (a chain to an unknown root).
        case unknownRoot
        /// Issued by an intermediate authority that the authority issued; the server sends the
        /// leaf, the intermediate and the authority.
        case viaIntermediate
    }

    /// The authority's certificate: the root a client must trust to accept ``Kind/valid``.
    let authority: NIOSSLCertificate
    /// The authority's certificate in swift-certificates' form.
    let authorityCertificate: Certificate
    private let authorityKey: P256.Signing.PrivateKey
    private let authorityName: DistinguishedName

    /// Mints a new authority.
    init() throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Transit Test Authority") }
        let certificate = try Self.authority(name: name, key: key)
        authorityKey = key
        authorityName = name
        authorityCertificate = certificate
        authority = try Self.nio(certificate)
    }

    /// A server identity of `kind`, minted now.
    func identity(_ kind: Kind) throws -> Identity {
        let now = Date()
        let day: TimeInterval = 86400
        switch kind {
        case .valid:
            return try leaf(issuer: authorityName, issuerKey: authorityKey, from: now - day, until: now + day, extra: [authority])
        case .expired:
            return try leaf(issuer: authorityName, issuerKey: authorityKey, from: now - 3 * day, until: now - day, extra: [authority])
        case .notYetValid:
            return try leaf(issuer: authorityName, issuerKey: authorityKey, from: now + day, until: now + 3 * day, extra: [authority])
        case .wrongHost:
            return try leaf(issuer: authorityName, issuerKey: authorityKey, from: now - day, until: now + day, names: [.dnsName("wrong-host.example")], extra: [authority])
        case .selfSigned:
            return try leaf(issuer: nil, issuerKey: nil, from: now - day, until: now + day)
        case .viaIntermediate:
            let intermediateKey = P256.Signing.PrivateKey()
            let intermediateName = try DistinguishedName { CommonName("Transit Test Intermediate") }
            let intermediate = try Self.authority(name: intermediateName, key: intermediateKey, issuer: authorityName, issuerKey: authorityKey)
            return try leaf(issuer: intermediateName, issuerKey: intermediateKey, from: now - day, until: now + day, extra: [Self.nio(intermediate), authority])
        case .unknownRoot:
            let otherKey = P256.Signing.PrivateKey()
            let otherName = try DistinguishedName { CommonName("Untrusted Test Authority") }
            let other = try Self.authority(name: otherName, key: otherKey)
            return try leaf(issuer: otherName, issuerKey: otherKey, from: now - day, until: now + day, extra: [Self.nio(other)])
        }
    }

    /// An authority's certificate for `name` and `key`, issued by itself, or by `issuer` with
    /// `issuerKey` (an intermediate).
    static func authority(
        name: DistinguishedName,
        key: P256.Signing.PrivateKey,
        issuer: DistinguishedName? = nil,
        issuerKey: P256.Signing.PrivateKey? = nil
    ) throws -> Certificate {
        let now = Date()
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now - 7 * 86400,
            notValidAfter: now + 7 * 86400,
            issuer: issuer ?? name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(issuerKey ?? key)
        )
    }

    /// A leaf for `names` (127.0.0.1 and localhost by default), issued by `issuer` or, when it is
    /// `nil`, by itself; served with `extra` after it.
    private func leaf(
        issuer: DistinguishedName?,
        issuerKey: P256.Signing.PrivateKey?,
        from notBefore: Date,
        until notAfter: Date,
        names: [GeneralName] = [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))],
        extra: [NIOSSLCertificate] = []
    ) throws -> Identity {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName("Transit Test Server") }
        let leaf = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: issuer ?? subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: .init(issuerKey ?? key)
        )
        let pemKey = try Certificate.PrivateKey(key).serializeAsPEM().pemString
        return try Identity(
            chain: [Self.nio(leaf)] + extra,
            key: NIOSSLPrivateKey(bytes: Array(pemKey.utf8), format: .pem),
            leaf: leaf
        )
    }

    static func nio(_ certificate: Certificate) throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(certificate.serializeAsPEM().pemString.utf8), format: .pem)
    }
}
