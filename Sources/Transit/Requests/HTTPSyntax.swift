/// The character rules of RFC 9110 and RFC 3986 that Transit checks before anything reaches a
/// transport. Pure functions over UTF-8 bytes, so they behave the same on every platform
/// (Linux Foundation silently percent-encodes or drops what Apple's rejects).
package enum HTTPSyntax {
    /// `true` if `text` is an RFC 9110 token (a method or a header name): one or more of
    /// ALPHA, DIGIT and ``!#$%&'*+-.^_`|~``.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && allBytes(of: text, satisfy: isTokenByte)
    }

    /// The token characters as a bit set: bit `b` of `tokenBitsLow` (bytes 0–63) or of
    /// `tokenBitsHigh` (bytes 64–127) is set when byte `b` may appear in a token. One shift and
    /// one mask per byte; the request-headers fuzz target checks it against the RFC's list.
    private static let tokenBitsLow: UInt64 = 0x03FF_6CFA_0000_0000
    private static let tokenBitsHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    @inline(__always)
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        if byte < 64 { return tokenBitsLow & (1 &<< UInt64(byte)) != 0 }
        if byte < 128 { return tokenBitsHigh & (1 &<< UInt64(byte &- 64)) != 0 }
        return false
    }

    /// `true` if every UTF-8 byte of `text` passes `test`. Reads a native string's bytes in
    /// place (a loop over a buffer, not an iterator per byte); a bridged string falls back to
    /// the UTF-8 view.
    @inline(__always)
    static func allBytes(of text: String, satisfy test: (UInt8) -> Bool) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            for byte in bytes where !test(byte) { return false }
            return true
        }) {
            return result
        }
        return text.utf8.allSatisfy(test)
    }

    /// `true` if two header names are the same name: ASCII letters compared case-insensitively,
    /// everything else byte for byte (header names are tokens, which are ASCII).
    package static func sameFieldName(_ a: String, _ b: String) -> Bool {
        let a = a.utf8, b = b.utf8
        guard a.count == b.count else { return false }
        @inline(__always) func same(_ x: UInt8, _ y: UInt8) -> Bool {
            x == y || (x ^ y == 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
        // Native strings (all of them in practice) are compared in place, byte by byte.
        let inPlace = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y -> Bool in
                for index in x.indices where !same(x[index], y[index]) { return false }
                return true
            }
        }
        if let inPlace, let result = inPlace { return result }
        return zip(a, b).allSatisfy(same)
    }

    /// `true` if `token` can follow `Bearer ` in an `Authorization` header: not empty, and no
    /// whitespace or control character (a token read from a file often ends with a newline,
    /// which Linux Foundation would drop together with the whole header).
    static func isBearerToken(_ token: String) -> Bool {
        !token.isEmpty && allBytes(of: token) { $0 > 0x20 && $0 != 0x7F }
    }

    /// `true` if `text` can be sent as a header value: no control character other than a
    /// horizontal tab (so no CR, LF or NUL, which would let a value inject headers or split the
    /// request).
    static func isFieldValue(_ text: String) -> Bool {
        allBytes(of: text) { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// `true` for the RFC 3986 unreserved characters, which never need percent-encoding.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
    }

    /// Percent-encodes every byte of `text`'s UTF-8 form that is not unreserved, so the result is
    /// safe as a query item name or value: `+`, `&`, `=`, `#`, `/`, `?` and spaces are all encoded
    /// (a `+` left bare would reach most servers as a space).
    static func percentEncodeQueryComponent(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first problem that keeps `text` from being valid URI text, or `nil` if it is valid:
    /// every character must be unreserved, a sub-delimiter, one of `extra`, or a `%` followed by
    /// two hexadecimal digits.
    static func uriProblem(in text: String, allowing extra: String) -> String? {
        let bytes = Array(text.utf8)
        let allowed = Array(("!$&'()*+,;=" + extra).utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) else {
                    return "'%' must be followed by two hexadecimal digits (write '%25' for a literal '%')"
                }
                index += 3
                continue
            }
            if !isUnreserved(byte) && !allowed.contains(byte) {
                return "it contains \(describe(byte: byte, in: text, at: index)), which must be percent-encoded"
            }
            index += 1
        }
        return nil
    }

    /// `text` with every `%` followed by two hexadecimal digits replaced by the byte they name,
    /// read as UTF-8 (invalid sequences become U+FFFD). A `%` not followed by two hex digits is
    /// kept as it is.
    static func percentDecoded(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
            return true
        default:
            return false
        }
    }

    private static func describe(byte: UInt8, in text: String, at index: Int) -> String {
        switch byte {
        case UInt8(ascii: " "): return "a space"
        case 0x0A: return "a line feed"
        case 0x0D: return "a carriage return"
        case 0x09: return "a tab"
        case 0..<0x20, 0x7F: return "a control character (0x\(String(byte, radix: 16, uppercase: true)))"
        case 0x80...: return "a non-ASCII character"
        default: return "'\(Character(Unicode.Scalar(byte)))'"
        }
    }
}
