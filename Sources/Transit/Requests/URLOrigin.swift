import Foundation
import Signals

/// The origin of a URL (`scheme://host:port`) and the default ``RequestKey`` (the origin and the
/// first path segment), read by the policies — rate limits, cooldowns, host failover — for
/// every request, so they must cost almost nothing.
///
/// Foundation's `url.scheme`, `url.host`, `url.port` and `url.path` each parse or decode the URL
/// again, at a cost on Linux comparable to the policies' own work. A *plain* URL is read instead in one
/// scan of `url.absoluteString`'s bytes and the result is made as one string; every other URL
/// is left to Foundation (``foundationKey(_:)``, ``foundationOrigin(_:)``,
/// ``foundationHostOrigin(_:)``, the code used before), so the results are those of Foundation
/// for every URL, byte for byte.
///
/// A URL is plain when it has no base URL and its absolute string is:
/// - a scheme: an ASCII letter, then ASCII letters, digits, `+`, `-` or `.`, followed by `://`;
/// - a non-empty host of ASCII letters, digits, `.` and `-` only (no userinfo `@`, no IPv6
///   `[…]`, no percent-encoding), then optionally `:` and at most 5 digits (an empty port is
///   the default one), ending the authority at `/`, `?`, `#` or the end;
/// - for a key, also: a first non-empty path segment of unreserved characters only (ASCII
///   letters, digits, `-`, `.`, `_`, `~`), and no `%` (Foundation's decoded path is empty when
///   any percent-escape does not decode) nor `;` (path parameters) in the rest of the path.
///
/// The scheme and host are lowercased, and the port, when absent or empty, is the scheme's
/// default: 443 for `https`, 80 for every other scheme (as before).
enum URLOrigin {
    /// The default key of `url`: `scheme://host:port/first-segment` (the segment may be empty).
    static func key(_ url: URL) -> String {
        plain(url, withFirstSegment: true) ?? foundationKey(url)
    }

    /// `scheme://host:port` of `url`; a missing scheme or host is left empty.
    static func origin(_ url: URL) -> String {
        plain(url, withFirstSegment: false) ?? foundationOrigin(url)
    }

    /// `scheme://host:port` of `url`, or `nil` when it has no scheme or an empty host (host
    /// failover's origin).
    static func hostOrigin(_ url: URL) -> String? {
        plain(url, withFirstSegment: false) ?? foundationHostOrigin(url)
    }

    // MARK: Foundation, for URLs that are not plain (and the reference of the tests)

    /// ``key(_:)`` by Foundation's URL accessors.
    static func foundationKey(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)/\(RequestKey.firstSegment(of: url.path))"
    }

    /// ``origin(_:)`` by Foundation's URL accessors.
    static func foundationOrigin(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// ``hostOrigin(_:)`` by Foundation's URL accessors.
    static func foundationHostOrigin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    // MARK: The fast path

    /// The origin of `url`, followed when `withFirstSegment` by `/` and its first non-empty path
    /// segment; `nil` when `url` is not plain (see ``URLOrigin``) and Foundation must read it.
    static func plain(_ url: URL, withFirstSegment: Bool) -> String? {
        // A relative URL's parts are its base's: left to Foundation.
        guard url.baseURL == nil else { return nil }
        var string = url.absoluteString
        // A client's requests mostly go to a few URLs, often the same one again: the last URL
        // read is remembered with its result, and comparing strings is a fraction of a scan.
        let memo = withFirstSegment ? lastKey : lastOrigin
        if let remembered = memo.withLock({ last in last.flatMap { $0.url == string ? $0.result : nil } }) {
            return remembered
        }
        let result = string.withUTF8 { plain($0, withFirstSegment: withFirstSegment) }
        if let result { memo.withLock { $0 = (string, result) } }
        return result
    }

    /// The last plain URL string ``plain(_:withFirstSegment:)`` read for a key, and its key.
    private static let lastKey = Locked<(url: String, result: String)?>(nil)
    /// The last plain URL string ``plain(_:withFirstSegment:)`` read for an origin, and its
    /// origin.
    private static let lastOrigin = Locked<(url: String, result: String)?>(nil)

    /// The scheme and host of `url`, lowercased, when it is plain (see ``URLOrigin``); `nil`
    /// when Foundation must read it. (A credential scope compares the bytes of
    /// ``withPlainSchemeAndHost(_:_:)`` instead, without making strings.)
    static func plainSchemeAndHost(_ url: URL) -> (scheme: String, host: String)? {
        withPlainSchemeAndHost(url) { scheme, host in (lowercasedString(scheme), lowercasedString(host)) }
    }

    /// `body` of the scheme's and the host's bytes in `url`'s absolute string, as written (not
    /// lowercased), when `url` is plain up to its authority (see ``URLOrigin``); `nil` when
    /// Foundation must read it.
    static func withPlainSchemeAndHost<Result>(
        _ url: URL,
        _ body: (_ scheme: Slice<UnsafeBufferPointer<UInt8>>, _ host: Slice<UnsafeBufferPointer<UInt8>>) -> Result
    ) -> Result? {
        guard url.baseURL == nil else { return nil }
        var string = url.absoluteString
        return string.withUTF8 { bytes -> Result? in
            guard let authority = authority(bytes) else { return nil }
            return body(bytes[0..<authority.schemeEnd], bytes[authority.host])
        }
    }

    /// `bytes` as a string, ASCII letters lowercased.
    private static func lowercasedString(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { out in
            for (at, byte) in bytes.enumerated() { out[at] = lowercased(byte) }
            return bytes.count
        }
    }

    /// Where the scheme ends and the host is in an absolute URL string's UTF-8 bytes, the port
    /// (-1 when there is none or it is empty) and where the authority ends; `nil` if the URL is
    /// not plain up to there.
    private static func authority(_ bytes: UnsafeBufferPointer<UInt8>) -> (schemeEnd: Int, host: Range<Int>, port: Int, end: Int)? {
        let count = bytes.count
        // Scheme: a letter, then letters, digits, `+`, `-`, `.`; then `://`.
        guard count > 0, isLetter(bytes[0]) else { return nil }
        var index = 1
        while index < count, isSchemeByte(bytes[index]) { index += 1 }
        let schemeEnd = index
        guard count - index >= 3, bytes[index] == colon, bytes[index + 1] == slash, bytes[index + 2] == slash else { return nil }
        index += 3

        // Host: letters, digits, `.`, `-`; not empty.
        let hostStart = index
        while index < count, isHostByte(bytes[index]) { index += 1 }
        let hostEnd = index
        guard hostEnd > hostStart else { return nil }

        // Port: `:` and up to 5 digits; none or empty is the scheme's default (-1 here).
        var port = -1
        if index < count, bytes[index] == colon {
            index += 1
            let digitsStart = index
            var value = 0
            while index < count, isDigit(bytes[index]), index - digitsStart < 5 {
                value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            if index > digitsStart { port = value }
        }
        // The authority ends here, or the URL is not plain (userinfo, IPv6, `%`, a 6th digit…).
        if index < count, !isAuthorityEnd(bytes[index]) { return nil }
        return (schemeEnd, hostStart..<hostEnd, port, index)
    }

    /// ``plain(_:withFirstSegment:)`` of an absolute URL string's UTF-8 bytes.
    static func plain(_ bytes: UnsafeBufferPointer<UInt8>, withFirstSegment: Bool) -> String? {
        let count = bytes.count
        guard let authority = authority(bytes) else { return nil }
        let schemeEnd = authority.schemeEnd
        let hostStart = authority.host.lowerBound
        let hostEnd = authority.host.upperBound
        var index = authority.end
        var port = authority.port
        if port < 0 {
            let isHTTPS = schemeEnd == 5
                && bytes[0] | 0x20 == UInt8(ascii: "h") && bytes[1] | 0x20 == UInt8(ascii: "t")
                && bytes[2] | 0x20 == UInt8(ascii: "t") && bytes[3] | 0x20 == UInt8(ascii: "p")
                && bytes[4] | 0x20 == UInt8(ascii: "s")
            port = isHTTPS ? 443 : 80
        }

        // First segment: after any `/`, unreserved characters up to `/`, `?`, `#` or the end.
        var segmentStart = index
        var segmentEnd = index
        if withFirstSegment {
            while index < count, bytes[index] == slash { index += 1 }
            segmentStart = index
            while index < count, isUnreserved(bytes[index]) { index += 1 }
            segmentEnd = index
            // The rest of the path: printable ASCII without `%` (an escape that does not decode
            // empties Foundation's path) nor `;`.
            while index < count, bytes[index] != question, bytes[index] != hash {
                let byte = bytes[index]
                guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%"), byte != UInt8(ascii: ";") else { return nil }
                if index == segmentEnd, byte != slash { return nil }
                index += 1
            }
        }

        // One string: scheme, `://`, host, `:`, port, and `/` and the segment for a key.
        let portDigits = port >= 10_000 ? 5 : port >= 1_000 ? 4 : port >= 100 ? 3 : port >= 10 ? 2 : 1
        let length = schemeEnd + 3 + (hostEnd - hostStart) + 1 + portDigits
            + (withFirstSegment ? 1 + segmentEnd - segmentStart : 0)
        return String(unsafeUninitializedCapacity: length) { out in
            var at = 0
            for offset in 0..<schemeEnd {
                out[at] = lowercased(bytes[offset])
                at += 1
            }
            out[at] = colon
            out[at + 1] = slash
            out[at + 2] = slash
            at += 3
            for offset in hostStart..<hostEnd {
                out[at] = lowercased(bytes[offset])
                at += 1
            }
            out[at] = colon
            at += 1 + portDigits
            var rest = port
            for digit in 1...portDigits {
                out[at - digit] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
            if withFirstSegment {
                out[at] = slash
                at += 1
                for offset in segmentStart..<segmentEnd {
                    out[at] = bytes[offset]
                    at += 1
                }
            }
            return at
        }
    }

    private static var colon: UInt8 { UInt8(ascii: ":") }
    private static var slash: UInt8 { UInt8(ascii: "/") }
    private static var question: UInt8 { UInt8(ascii: "?") }
    private static var hash: UInt8 { UInt8(ascii: "#") }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool {
        byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inline(__always)
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    @inline(__always)
    private static func isHostByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    @inline(__always)
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        isHostByte(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    @inline(__always)
    private static func isAuthorityEnd(_ byte: UInt8) -> Bool {
        byte == slash || byte == question || byte == hash
    }

    /// `byte` lowercased if it is an ASCII capital.
    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
