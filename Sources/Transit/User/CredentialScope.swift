import Foundation

/// Where an authorizer's credentials may go: named hosts, over https.
///
/// Credentials are added only to requests whose host is one of ``hosts`` (exactly, or a
/// subdomain for an entry written `*.example.com`) and whose scheme is `https` — or `http` when
/// ``insecureHTTP`` allows it (loopback only, for tests and development, unless you say
/// otherwise).
public struct CredentialScope: Sendable, Hashable {
    /// When credentials may travel over plain `http`.
    public enum InsecureHTTP: Sendable, Hashable {
        /// Never (the default).
        case refused
        /// To loopback hosts only (`127.0.0.0/8`, `::1`, `localhost`): for tests and development.
        /// An IPv4 address counts only when written as four decimal numbers without leading
        /// zeros, as in `127.0.0.1` (libcurl reads `127.0.0.09` as a DNS name).
        case loopbackOnly
        /// To every host of the scope. Credentials can then be read by anyone on the path.
        case allowed
    }

    /// The hosts, lowercased; `*.example.com` matches every subdomain of `example.com`.
    public let hosts: Set<String>
    /// When plain `http` is allowed.
    public let insecureHTTP: InsecureHTTP

    /// Creates a scope.
    public init(hosts: Set<String>, insecureHTTP: InsecureHTTP = .refused) {
        self.hosts = Set(hosts.map { $0.lowercased() })
        self.insecureHTTP = insecureHTTP
    }

    /// Whether credentials may be sent to `url`.
    public func allows(_ url: URL) -> Bool {
        // A plain URL's scheme and host are read in one scan of its bytes (every request in a
        // client with an authoriser asks); Foundation reads any other.
        let parts = URLOrigin.plainSchemeAndHost(url) ?? url.scheme.flatMap { scheme in
            url.host.map { (scheme.lowercased(), $0.lowercased()) }
        }
        guard let (scheme, host) = parts, !host.isEmpty else { return false }
        let named = hosts.contains(host) || hosts.contains { entry in
            entry.hasPrefix("*.") && host.hasSuffix(entry.dropFirst(1)) && host.count > entry.count - 1
        }
        guard named else { return false }
        switch scheme {
        case "https": return true
        case "http":
            switch insecureHTTP {
            case .refused: return false
            case .allowed: return true
            case .loopbackOnly: return Self.isLoopback(host)
            }
        default: return false
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        var host = host
        return host.withUTF8(isLoopback)
    }

    /// ``isLoopback(_:)`` of a host's UTF-8 bytes (read as bytes: this runs for every request
    /// the authoriser sees).
    private static func isLoopback(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var bare = bytes[...]
        if bare.first == UInt8(ascii: "["), bare.last == UInt8(ascii: "]") { bare = bare.dropFirst().dropLast() }
        if bare.elementsEqual("localhost".utf8) || bare.elementsEqual("::1".utf8) { return true }
        // 127.x.y.z: four decimal octets of at most 255 without leading zeros (as inet_pton reads
        // them: libcurl reads `010` as octal and `09` as part of a name), the first 127.
        var octets = 0
        var value = 0
        var digits = 0
        var first = -1
        for byte in bare {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                if first < 0 { first = value }
                octets += 1
                value = 0
                digits = 0
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 {
                guard digits == 0 || value > 0 else { return false }   // a leading zero
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return false }
            } else {
                return false
            }
        }
        return digits > 0 && octets == 3 && first == 127
    }
}
