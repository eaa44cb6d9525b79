#if canImport(Security) && !canImport(FoundationNetworking)
import CryptoKit
import Foundation
import Security

/// The server-trust challenge of `URLSession` on Apple platforms, answered by a
/// ``ServerTrustPolicy``: the chain is evaluated with the rule's roots added to the system's,
/// then its pins are checked against every certificate of the chain.
///
/// Not compiled on Linux, so not exercised by the project's continuous integration; it uses only
/// long-standing Security APIs.
enum ServerTrustEvaluation {
    /// The answer to `challenge`, or `nil` when it is not a server-trust challenge for a host
    /// the policy covers (then the usual handling applies).
    static func answer(
        _ challenge: URLAuthenticationChallenge,
        policy: ServerTrustPolicy?
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?)? {
        let space = challenge.protectionSpace
        guard space.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let policy, let rule = policy.rule(for: space.host) else { return nil }
        guard let trust = space.serverTrust, evaluate(trust, rule: rule) else {
            return (.cancelAuthenticationChallenge, nil)
        }
        return (.useCredential, URLCredential(trust: trust))
    }

    /// Whether `trust` passes `rule`: trusted by the system's roots and the rule's, and matching
    /// a pin when the rule has any.
    static func evaluate(_ trust: SecTrust, rule: ServerTrustPolicy.Rule) -> Bool {
        if !rule.roots.isEmpty {
            let anchors = rule.roots.compactMap { SecCertificateCreateWithData(nil, $0.der as CFData) }
            guard anchors.count == rule.roots.count,
                  SecTrustSetAnchorCertificates(trust, anchors as CFArray) == errSecSuccess,
                  // The system's roots stay trusted too.
                  SecTrustSetAnchorCertificatesOnly(trust, false) == errSecSuccess else { return false }
        }
        guard SecTrustEvaluateWithError(trust, nil) else { return false }
        guard !rule.pins.isEmpty else { return true }
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        for certificate in chain {
            let der = SecCertificateCopyData(certificate) as Data
            let certificateDigest = Data(SHA256.hash(data: der))
            let keyDigest = publicKeyInfo(of: certificate).map { Data(SHA256.hash(data: $0)) }
            for pin in rule.pins {
                switch pin {
                case let .certificateDigest(digest) where digest == certificateDigest: return true
                case let .publicKeyDigest(digest) where digest == keyDigest: return true
                default: continue
                }
            }
        }
        return false
    }

    /// The SubjectPublicKeyInfo of `certificate`: the key's external representation behind the
    /// ASN.1 header of its algorithm, for RSA (2048, 3072, 4096 bits) and EC (P-256, P-384) keys.
    private static func publicKeyInfo(of certificate: SecCertificate) -> Data? {
        guard let key = SecCertificateCopyKey(certificate),
              let attributes = SecKeyCopyAttributes(key) as? [CFString: Any],
              let type = attributes[kSecAttrKeyType] as? String,
              let bits = attributes[kSecAttrKeySizeInBits] as? Int,
              let raw = SecKeyCopyExternalRepresentation(key, nil) as Data? else { return nil }
        let header: [UInt8]
        switch (type == (kSecAttrKeyTypeRSA as String), type == (kSecAttrKeyTypeECSECPrimeRandom as String), bits) {
        case (true, _, 2048):
            header = [0x30, 0x82, 0x01, 0x22, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00, 0x03, 0x82, 0x01, 0x0F, 0x00]
        case (true, _, 3072):
            header = [0x30, 0x82, 0x01, 0xA2, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00, 0x03, 0x82, 0x01, 0x8F, 0x00]
        case (true, _, 4096):
            header = [0x30, 0x82, 0x02, 0x22, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00, 0x03, 0x82, 0x02, 0x0F, 0x00]
        case (_, true, 256):
            header = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]
        case (_, true, 384):
            header = [0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00]
        default:
            return nil
        }
        return Data(header) + raw
    }
}
#endif
