import Foundation

/// Which servers a transport trusts, host by host: extra root certificates (a private
/// certificate authority) and pins (digests of a certificate or of its public key).
///
/// ```swift
/// let policy = try ServerTrustPolicy([
///     .init(host: "api.internal.example", roots: ServerTrustPolicy.Certificate.pem(caPEM)),
///     .init(host: "*.example.com", pins: [
///         .publicKey(sha256: "r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="),
///         .publicKey(sha256: "YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="),  // the backup key
///     ]),
/// ])
/// let transport = URLSessionTransport(serverTrust: policy)
/// ```
///
/// A rule names a host exactly (`api.example.com`) or with a wildcard for exactly one label
/// (`*.example.com` covers `a.example.com`, not `example.com` nor `a.b.example.com`). An exact
/// rule wins over a wildcard one. An IP address (`127.0.0.1`, `[::1]`) is covered by an exact
/// rule only. Hosts that no rule covers are trusted as the transport trusts them without a policy.
///
/// Rules and the hosts of requests are compared in one normal form, on every transport:
/// - case and one trailing dot do not count;
/// - a name written in Unicode is its IDNA ASCII form, the form URL hosts arrive in: a rule for
///   `bücher.test` is kept as `xn--bcher-kva.test` and covers both spellings. The encoding is
///   RFC 3492 punycode of each label after Unicode normalisation form C and a lower-case
///   mapping; other mappings of UTS #46 (`ß` to `ss`, say) are not made, so write such a name as
///   the URLs you send spell it;
/// - an IPv4 address is the same in every spelling WHATWG's URL parser and the system's resolver
///   accept (`127.1`, `2130706433`, `0x7f.0.0.1`, `127.000.000.001`), and an IPv4-mapped IPv6
///   address (`[::ffff:127.0.0.1]`) is its IPv4 address; an IPv6 address is compared as RFC 5952
///   writes it.
///
/// A rule that could never apply is refused when it is made: a host no URL can have (a space,
/// `%`, `<`, `@` and the like, an empty label, a label longer than 63 bytes once encoded), a name
/// whose last label is a number but that is no IPv4 address (`1.2.3.256`), a wildcard over an
/// address.
///
/// For a covered host, the policy is enforced before any byte of the request is sent, and a
/// transport that cannot enforce it fails the request with ``ServerTrustError`` instead of
/// sending it:
///
/// - Roots are trusted **in addition** to the system's, for that host only.
/// - Pins, when a rule has any, must match a certificate of the server's chain once it is validated
///   (leaf, intermediates or root; a certificate the server sends outside that chain never
///   matches): a certificate pin the SHA-256 of its DER, a public-key pin the SHA-256 of its
///   SubjectPublicKeyInfo. Pins never replace validation. Give several so that a key can rotate
///   to a backup.
/// - A plain `http` request to a covered host fails with ``ServerTrustError/Reason/notEncrypted``:
///   there is no server to verify.
///
/// What each transport enforces is listed in the Security guide: ``URLSessionTransport`` on Apple
/// platforms enforces roots and pins; on Linux it cannot enforce either and fails closed;
/// `AsyncHTTPClientTransport` enforces roots, and pins in the TLS handshake of its own connections
/// to pinned hosts.
public struct ServerTrustPolicy: Sendable, Hashable {
    /// The rules, in the order given.
    public let rules: [Rule]

    /// A policy of `rules`. Throws ``InputError`` when two rules name the same host.
    public init(_ rules: [Rule]) throws {
        var seen = Set<String>()
        for rule in rules where !seen.insert(rule.host).inserted {
            throw InputError("Two server-trust rules name the host \"\(rule.host)\".")
        }
        self.rules = rules
    }

    /// The rule that covers `host` (an exact rule before a wildcard one), or `nil`. `host` is
    /// compared in the policy's one normal form (see ``ServerTrustPolicy``): any spelling of a
    /// covered address or name finds its rule; text that is no host finds none.
    public func rule(for host: String) -> Rule? {
        guard let normal = NormalizedHost(host) else { return nil }
        let name = normal.name
        if let exact = rules.first(where: { $0.host == name }) { return exact }
        // An IP address is covered by its exact rule only.
        guard !normal.isAddress, let dot = name.firstIndex(of: "."), dot != name.startIndex else { return nil }
        let parent = "*" + name[dot...]
        return rules.first { $0.host == parent }
    }

    /// The trust of one host name or wildcard.
    public struct Rule: Sendable, Hashable {
        /// The host in the policy's normal form (see ``ServerTrustPolicy``): a name in lower-case
        /// ASCII (IDNA) without a trailing dot, or `*.` and such a domain, or an IP address
        /// (IPv4 dotted-decimal, IPv6 as RFC 5952 writes it, without brackets).
        public let host: String
        /// Root certificates trusted for the host, in addition to the system's.
        public let roots: [Certificate]
        /// Digests of which one must match a certificate of the server's chain; empty for no
        /// pinning.
        public let pins: [Pin]

        /// A rule for `host` (exact, or `*.domain` for exactly one label in front of `domain`),
        /// in any spelling: it is kept in the policy's normal form (see ``ServerTrustPolicy``),
        /// a Unicode name as its IDNA ASCII form.
        ///
        /// Throws ``InputError`` for a host that no request could have, so that the rule could
        /// never apply (empty, an empty label, a character no host has, a label longer than 63
        /// bytes once encoded, a last label that is a number in a name that is no IPv4 address),
        /// or that has a `*` anywhere but as the whole first label of a name with at least two
        /// more labels, or a wildcard over an IP address.
        public init(host: String, roots: [Certificate] = [], pins: [Pin] = []) throws {
            let wildcardError = InputError(
                "\"\(host)\": a wildcard must be the whole first label of a name of at least three labels (\"*.example.com\")."
            )
            let name: String
            if host.hasPrefix("*.") {
                let domain = String(host.dropFirst(2))
                guard !domain.contains("*") else { throw wildcardError }
                guard let normal = NormalizedHost(domain) else { throw Self.notAHost(host) }
                guard !normal.isAddress else { throw InputError("\"\(host)\": a wildcard never covers an IP address, so the rule could never apply.") }
                guard normal.name.contains(".") else { throw wildcardError }
                name = "*." + normal.name
            } else {
                guard !host.contains("*") else { throw wildcardError }
                guard let normal = NormalizedHost(host) else { throw Self.notAHost(host) }
                name = normal.name
            }
            self.host = name
            self.roots = roots
            self.pins = pins
        }

        private static func notAHost(_ host: String) -> InputError {
            InputError("\"\(host)\" is not a host name or IP address a URL can have, so the rule could never apply.")
        }
    }

    /// A certificate, as DER. Made from DER bytes or PEM text; its outer structure is checked.
    public struct Certificate: Sendable, Hashable {
        /// The certificate's DER encoding.
        public let der: Data

        /// A certificate from its DER encoding. Throws ``InputError`` when `der` is not one
        /// complete ASN.1 `SEQUENCE` holding a `SEQUENCE` (the shape of an X.509 certificate).
        public init(der: Data) throws {
            guard let length = Self.sequenceLength(der, at: der.startIndex), length == der.count,
                  let header = Self.headerLength(der, at: der.startIndex),
                  let inner = Self.sequenceLength(der, at: der.startIndex + header), inner <= der.count - header else {
                throw InputError("The data (\(der.count) bytes) is not a DER-encoded certificate.")
            }
            self.der = der
        }

        /// Every certificate in `text`, PEM blocks `-----BEGIN CERTIFICATE-----` …
        /// `-----END CERTIFICATE-----` (text between blocks is ignored).
        ///
        /// Throws ``InputError`` when there is no certificate, a block of another kind, a block
        /// without its end, or a block whose base64 or DER is malformed.
        public static func pem(_ text: String) throws -> [Certificate] {
            var certificates: [Certificate] = []
            var body: String?
            for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
                let line = rawLine.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("-----BEGIN ") {
                    guard body == nil else { throw InputError("PEM line \(index + 1): a block begins before the previous one ends.") }
                    guard line == "-----BEGIN CERTIFICATE-----" else {
                        throw InputError("PEM line \(index + 1): only CERTIFICATE blocks are accepted.")
                    }
                    body = ""
                } else if line.hasPrefix("-----END ") {
                    guard let base64 = body, line == "-----END CERTIFICATE-----" else {
                        throw InputError("PEM line \(index + 1): an end without its CERTIFICATE begin.")
                    }
                    guard let der = Data(base64Encoded: base64) else {
                        throw InputError("PEM certificate \(certificates.count + 1): the base64 is malformed or truncated.")
                    }
                    do {
                        certificates.append(try Certificate(der: der))
                    } catch {
                        throw InputError("PEM certificate \(certificates.count + 1): the base64 does not hold a DER-encoded certificate.")
                    }
                    body = nil
                } else if body != nil {
                    body! += line
                }
            }
            guard body == nil else { throw InputError("The PEM text ends inside a CERTIFICATE block.") }
            guard !certificates.isEmpty else { throw InputError("The PEM text holds no CERTIFICATE block.") }
            return certificates
        }

        /// The length of the header (tag and length) of the element at `index`.
        private static func headerLength(_ data: Data, at index: Data.Index) -> Int? {
            guard index + 1 < data.endIndex else { return nil }
            let first = data[index + 1]
            if first < 0x80 { return 2 }
            let count = Int(first & 0x7F)
            return (1...4).contains(count) ? 2 + count : nil
        }

        /// The whole length (header and content) of the `SEQUENCE` at `index`, or `nil` when
        /// there is none or it is malformed.
        private static func sequenceLength(_ data: Data, at index: Data.Index) -> Int? {
            guard index < data.endIndex, data[index] == 0x30, let header = headerLength(data, at: index),
                  index + header <= data.endIndex else { return nil }
            let first = data[index + 1]
            var content = 0
            if first < 0x80 {
                content = Int(first)
            } else {
                for byte in data[(index + 2)..<(index + header)] { content = content << 8 | Int(byte) }
            }
            return header + content
        }
    }

    /// A SHA-256 digest that a certificate of the server's chain must match.
    public enum Pin: Sendable, Hashable {
        /// The SHA-256 of a certificate's DER encoding.
        case certificateDigest(Data)
        /// The SHA-256 of a certificate's SubjectPublicKeyInfo (what HPKP's `pin-sha256` and
        /// `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64` give).
        case publicKeyDigest(Data)

        /// A certificate pin from its base64 digest (an optional `sha256/` prefix is allowed).
        /// Throws ``InputError`` when it is not the base64 of 32 bytes.
        public static func certificate(sha256 base64: String) throws -> Pin {
            .certificateDigest(try digest(base64))
        }

        /// A public-key pin from its base64 digest (an optional `sha256/` prefix is allowed).
        /// Throws ``InputError`` when it is not the base64 of 32 bytes.
        public static func publicKey(sha256 base64: String) throws -> Pin {
            .publicKeyDigest(try digest(base64))
        }

        private static func digest(_ base64: String) throws -> Data {
            var text = Substring(base64.trimmingCharacters(in: .whitespacesAndNewlines))
            if text.lowercased().hasPrefix("sha256/") { text = text.dropFirst(7) }
            guard let digest = Data(base64Encoded: String(text)), digest.count == 32 else {
                throw InputError("\"\(base64)\" is not a base64 SHA-256 digest (32 bytes).")
            }
            return digest
        }
    }

    /// Malformed input to a policy (a host, a certificate, a pin), thrown when it is made.
    public struct InputError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError, DescribedError {
        /// What is wrong, in a sentence.
        let message: String

        init(_ message: String) {
            self.message = message
        }

        /// The message.
        public var description: String { message }
    }
}

/// A request to a host that a ``ServerTrustPolicy`` covers, refused: the server failed the
/// policy, or the transport cannot enforce it (then nothing was sent).
///
/// It names the host and the reason, never the request's path, query or headers.
public struct ServerTrustError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError, DescribedError {
    /// Why the request was refused.
    public enum Reason: Sendable, Hashable {
        /// The transport cannot enforce the host's rule; the request was not sent. `because` says
        /// what the transport lacks.
        case notEnforceable(transport: String, because: String)
        /// The request is plain `http`: there is no server certificate to verify.
        case notEncrypted
        /// The server's chain is valid, but no certificate of it matches a pin of the rule; the
        /// request was not sent.
        case pinMismatch
        /// The server's chain is not trusted by the rule's roots and the transport's (an unknown
        /// authority, a bad date, another host's certificate); the request was not sent. A
        /// transport that reports such failures with `URLError` codes
        /// (`.serverCertificateUntrusted`, `.serverCertificateHasBadDate`, …) gives this reason
        /// under the error's `NSUnderlyingErrorKey`.
        case untrusted
    }

    /// The host the request went to.
    public let host: String
    /// Why it was refused.
    public let reason: Reason

    /// A refusal of a request to `host` for `reason`.
    public init(host: String, reason: Reason) {
        self.host = host
        self.reason = reason
    }

    /// The host and the reason, in a sentence.
    public var description: String {
        switch reason {
        case let .notEnforceable(transport, because):
            return "The server-trust policy for \(host) cannot be enforced by \(transport) (\(because)); the request was not sent."
        case .notEncrypted:
            return "The server-trust policy covers \(host), but the request is not over TLS; it was not sent."
        case .pinMismatch:
            return "No certificate presented by \(host) matches a pin of its server-trust policy."
        case .untrusted:
            return "The certificate presented by \(host) is not trusted by its server-trust policy."
        }
    }
}
