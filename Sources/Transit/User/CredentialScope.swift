import Foundation

/// Where an authorizer's credentials may go: named hosts, over https.
///
/// Credentials are added only to requests whose host is one of the scope's hosts (exactly, or a
/// subdomain for an entry written `*.example.com`) and whose scheme is `https` — or `http` when
/// ``InsecureHTTP`` allows it (loopback only, for tests and development, unless you say
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
    let hosts: Set<String>
    /// When plain `http` is allowed.
    let insecureHTTP: InsecureHTTP

    /// Creates a scope: `hosts` (any case; `*.example.com` matches every subdomain of
    /// `example.com`), over `https`, or plain `http` as `insecureHTTP` allows.
    public init(hosts: Set<String>, insecureHTTP: InsecureHTTP = .refused) {
        self.hosts = Set(hosts.map { $0.lowercased() })
        self.insecureHTTP = insecureHTTP
    }

    /// Whether credentials may be sent to `url`.
    public func allows(_ url: URL) -> Bool {
        // Every request in a client with an authoriser asks. A plain URL's scheme and host are
        // compared as bytes where they are, in one scan, with no string made (unless the scope
        // names many hosts); Foundation reads any other URL.
        if let verdict = URLOrigin.withPlainSchemeAndHost(url, { scheme, host in allows(scheme: scheme, host: host) }) {
            return verdict
        }
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return false }
        return allows(scheme: scheme, host: host)
    }

    /// ``allows(_:)`` for a lowercased scheme and host.
    private func allows(scheme: String, host: String) -> Bool {
        guard !host.isEmpty else { return false }
        let named = hosts.contains(host) || hosts.contains { entry in
            entry.hasPrefix("*.") && host.hasSuffix(entry.dropFirst(1)) && host.count > entry.count - 1
        }
        guard named else { return false }
        switch scheme {
        case "https": return true
        case "http": return allowsHTTP(toLoopback: Self.isLoopback(host))
        default: return false
        }
    }

    /// ``allows(_:)`` for a plain URL's scheme and host bytes, as they are in the URL (ASCII
    /// letters in either case; the host of letters, digits, `.` and `-` only). With few hosts they
    /// are compared byte by byte; with many, the host is made a string and looked up.
    private func allows(scheme: Slice<UnsafeBufferPointer<UInt8>>, host: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard hosts.count <= 8 else {
            return allows(scheme: String(decoding: scheme, as: UTF8.self).lowercased(), host: String(decoding: host, as: UTF8.self).lowercased())
        }
        guard !host.isEmpty, hosts.contains(where: { Self.names(host, $0) }) else { return false }
        if Self.equalIgnoringASCIICase(scheme, "https") { return true }
        if Self.equalIgnoringASCIICase(scheme, "http") { return allowsHTTP(toLoopback: Self.isLoopback(UnsafeBufferPointer(rebasing: host))) }
        return false
    }

    private func allowsHTTP(toLoopback loopback: @autoclosure () -> Bool) -> Bool {
        switch insecureHTTP {
        case .refused: return false
        case .allowed: return true
        case .loopbackOnly: return loopback()
        }
    }

    /// Whether `entry` (lowercased) names the plain host `host`: the same bytes without ASCII
    /// case, or, for `*.example.com`, a host ending in `.example.com` with at least one byte
    /// before it. (A plain host is ASCII, so its bytes are its characters.)
    private static func names(_ host: Slice<UnsafeBufferPointer<UInt8>>, _ entry: String) -> Bool {
        var entry = entry
        return entry.withUTF8 { entry in
            if entry.count >= 2, entry[0] == UInt8(ascii: "*"), entry[1] == UInt8(ascii: ".") {
                let suffix = entry[1...]
                guard host.count > suffix.count else { return false }
                return equalIgnoringASCIICase(host[(host.endIndex - suffix.count)...], suffix)
            }
            return equalIgnoringASCIICase(host, entry[...])
        }
    }

    /// Whether `bytes`, ASCII letters lowercased, are `lowercase`'s bytes.
    private static func equalIgnoringASCIICase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        for (byte, other) in zip(bytes, lowercase) {
            let lowered = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard lowered == other else { return false }
        }
        return true
    }

    private static func equalIgnoringASCIICase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { equalIgnoringASCIICase(bytes, $0[...]) }
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
        if equalIgnoringASCIICase(bare, "localhost") || bare.elementsEqual("::1".utf8) { return true }
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
