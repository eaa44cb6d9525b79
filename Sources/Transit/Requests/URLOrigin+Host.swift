import Foundation

/// The one normal form of a host, in which server-trust rules and the hosts of requests are
/// compared (``ServerTrustPolicy``).
///
/// - **A domain name** is percent-decoded, its IDNA full stops (`。`, `．`, `｡`) read as `.`,
///   put in Unicode normalisation form C, lower-cased, stripped of one trailing dot, and each
///   label that is not ASCII written as IDNA's ASCII form (`xn--` and its RFC 3492 punycode:
///   `bücher.test` is `xn--bcher-kva.test`, the form URL hosts arrive in). This is IDNA's
///   encoding with a lower-case mapping, not all of UTS #46: no other character is mapped
///   (`ß` stays `ß`, so `straße` is `xn--strae-oqa`), and labels are not checked against
///   IDNA's tables.
/// - **An IPv4 address** in every spelling WHATWG's URL host parser accepts (and the system's
///   resolver too): one to four parts, each decimal, octal (a leading `0`) or hexadecimal
///   (`0x`), the last part holding the remaining bytes — `127.1`, `2130706433`, `0x7f.0.0.1`,
///   `127.000.000.001` — is written dotted-decimal, `127.0.0.1`.
/// - **An IPv6 address**, with or without its brackets, is written as RFC 5952 says (lower
///   case, the longest run of zero pieces compressed); an IPv4-mapped one (`::ffff:127.0.0.1`)
///   is its IPv4 address.
///
/// `nil` for text that is no host: a forbidden character (space, `%`, `/`, `:`, `<`, `>`, `@`,
/// `[`, `\`, `]`, `^`, `|`, `#`, `?`, a control character), an empty label, a label longer than
/// 63 bytes or a name longer than 253 once encoded, a name whose last label is a number but that
/// is no IPv4 address (`1.2.3.256`, `example.123`), a malformed IPv6 address.
struct NormalizedHost: Hashable, Sendable {
    /// The host in its normal form (an IPv6 address without brackets).
    let name: String
    /// Whether the host is an IP address (v4 or v6) rather than a domain name.
    let isAddress: Bool

    /// `host` in its normal form, or `nil` when it is no host (see ``NormalizedHost``).
    init?(_ host: String) {
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count >= 2, let address = Self.ipv6(host.dropFirst().dropLast()) else { return nil }
            self = address
            return
        }
        if host.contains(":") {
            guard let address = Self.ipv6(Substring(host)) else { return nil }
            self = address
            return
        }
        var text = HTTPSyntax.percentDecoded(host)
        for stop in ["\u{3002}", "\u{FF0E}", "\u{FF61}"] where text.contains(stop) {
            text = text.replacingOccurrences(of: stop, with: ".")
        }
        if !text.allSatisfy(\.isASCII) { text = text.precomposedStringWithCanonicalMapping }
        text = text.lowercased()
        if text.hasSuffix(".") { text.removeLast() }
        guard !text.isEmpty, !text.unicodeScalars.contains(where: Self.isForbidden) else { return nil }
        var labels: [String] = []
        for label in text.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else { return nil }
            if label.allSatisfy(\.isASCII) {
                labels.append(String(label))
            } else {
                guard let encoded = Punycode.encode(String(label)) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        if let last = labels.last, Self.endsInANumber(last) {
            guard let address = Self.ipv4(labels) else { return nil }
            self.init(name: Self.dotted(address), isAddress: true)
            return
        }
        guard labels.allSatisfy({ $0.utf8.count <= 63 }), labels.joined(separator: ".").utf8.count <= 253 else { return nil }
        self.init(name: labels.joined(separator: "."), isAddress: false)
    }

    private init(name: String, isAddress: Bool) {
        self.name = name
        self.isAddress = isAddress
    }

    /// WHATWG's forbidden domain code points (a C0 control, space, `#`, `%`, `/`, `:`, `<`, `>`,
    /// `?`, `@`, `[`, `\`, `]`, `^`, `|`, DEL).
    private static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 0x20 || scalar.value == 0x7F || "#%/:<>?@[\\]^|".unicodeScalars.contains(scalar)
    }

    // MARK: IPv4

    /// Whether `label` is a number as WHATWG reads one in a host's last label: decimal digits,
    /// or `0x` and hexadecimal digits.
    private static func endsInANumber(_ label: String) -> Bool {
        if !label.isEmpty, label.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        guard label.hasPrefix("0x") else { return false }
        return label.dropFirst(2).allSatisfy(\.isHexDigit)
    }

    /// The IPv4 address `parts` spell (WHATWG's IPv4 parser), or `nil`.
    private static func ipv4(_ parts: [String]) -> UInt32? {
        guard parts.count <= 4 else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = ipv4Number(part) else { return nil }
            numbers.append(number)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }), let last = numbers.last,
              last < UInt64(1) << (8 * UInt64(5 - numbers.count)) else { return nil }
        var address = last
        for (index, number) in numbers.dropLast().enumerated() {
            address += number << (8 * UInt64(3 - index))
        }
        return UInt32(address)
    }

    /// One part of an IPv4 address: `0x` hexadecimal, `0` octal, else decimal; `nil` when it is
    /// not a number or exceeds 32 bits.
    private static func ipv4Number(_ part: String) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = Substring(part)
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") {
            digits = digits.dropFirst(2)
            radix = 16
        } else if digits.count > 1, digits.hasPrefix("0") {
            digits = digits.dropFirst()
            radix = 8
        }
        var value: UInt64 = 0
        for character in digits {
            guard let digit = character.hexDigitValue, UInt64(digit) < radix else { return nil }
            value = value * radix + UInt64(digit)
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }

    /// `address` as `a.b.c.d`.
    private static func dotted(_ address: UInt32) -> String {
        (0..<4).map { String((address >> (8 * (3 - UInt32($0)))) & 0xFF) }.joined(separator: ".")
    }

    // MARK: IPv6

    /// The address `text` (without brackets) spells, as WHATWG's IPv6 parser reads it, in its
    /// normal form; `nil` when it is malformed.
    private static func ipv6(_ text: Substring) -> NormalizedHost? {
        guard let pieces = ipv6Pieces(Array(text.lowercased().utf8)) else { return nil }
        if pieces[0..<5].allSatisfy({ $0 == 0 }), pieces[5] == 0xFFFF {
            return NormalizedHost(name: dotted(UInt32(pieces[6]) << 16 | UInt32(pieces[7])), isAddress: true)
        }
        // RFC 5952: the longest run of two or more zero pieces (the first of equal ones) is `::`.
        var best: Range<Int>?
        var index = 0
        while index < 8 {
            guard pieces[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, pieces[end] == 0 { end += 1 }
            if end - index >= 2, end - index > (best?.count ?? 0) { best = index..<end }
            index = end
        }
        let hex = { (range: Range<Int>) in pieces[range].map { String($0, radix: 16) }.joined(separator: ":") }
        let name = best.map { hex(0..<$0.lowerBound) + "::" + hex($0.upperBound..<8) } ?? hex(0..<8)
        return NormalizedHost(name: name, isAddress: true)
    }

    /// The eight 16-bit pieces of an IPv6 address (WHATWG's IPv6 parser, an IPv4 address in
    /// the last two pieces included), or `nil`.
    private static func ipv6Pieces(_ input: [UInt8]) -> [UInt16]? {
        var pieces = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var pointer = 0
        let colon = UInt8(ascii: ":")
        func at(_ index: Int) -> UInt8? { index < input.count ? input[index] : nil }
        if at(0) == colon {
            guard at(1) == colon else { return nil }
            pointer = 2
            pieceIndex = 1
            compress = 1
        }
        while let byte = at(pointer) {
            guard pieceIndex < 8 else { return nil }
            if byte == colon {
                guard compress == nil else { return nil }
                pointer += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt16 = 0
            var length = 0
            while length < 4, let next = at(pointer), let digit = Character(UnicodeScalar(next)).hexDigitValue {
                value = value * 16 + UInt16(digit)
                pointer += 1
                length += 1
            }
            if at(pointer) == UInt8(ascii: ".") {
                // An IPv4 address in the last 32 bits: four decimal parts without leading zeros.
                guard length > 0, pieceIndex <= 6 else { return nil }
                pointer -= length
                var seen = 0
                while let next = at(pointer) {
                    var part: Int?
                    if seen > 0 {
                        guard next == UInt8(ascii: "."), seen < 4 else { return nil }
                        pointer += 1
                    }
                    while let digitByte = at(pointer), digitByte >= UInt8(ascii: "0"), digitByte <= UInt8(ascii: "9") {
                        let digit = Int(digitByte - UInt8(ascii: "0"))
                        if let current = part {
                            guard current != 0 else { return nil }
                            part = current * 10 + digit
                        } else {
                            part = digit
                        }
                        guard part! <= 255 else { return nil }
                        pointer += 1
                    }
                    guard let part else { return nil }
                    pieces[pieceIndex] = pieces[pieceIndex] * 0x100 + UInt16(part)
                    seen += 1
                    if seen == 2 || seen == 4 { pieceIndex += 1 }
                }
                guard seen == 4 else { return nil }
                break
            }
            if at(pointer) == colon {
                pointer += 1
                guard at(pointer) != nil else { return nil }
            } else if at(pointer) != nil {
                return nil
            }
            guard length > 0 else { return nil }
            pieces[pieceIndex] = value
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0, swaps > 0 {
                pieces.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return pieces
    }
}
