import Foundation

/// Request bodies as they may be printed: a URL-encoded form or a JSON body with the value of
/// every field whose name looks secret (see ``Redaction``) redacted; any other
/// body is not printed at all.
extension Redaction {
    /// A body as it may be printed: its text, secrets redacted, and the Unicode encoding it was
    /// read in when that is not plain UTF-8 (the text is then shown as UTF-8, and says so).
    struct PrintableBody: Equatable {
        /// The body's text, secrets redacted.
        var text: String
        /// `UTF-16LE`, `UTF-16BE`, `UTF-32LE`, `UTF-32BE`, or `UTF-8` for UTF-8 with a
        /// byte-order mark; `nil` for UTF-8 without one (shown byte for byte).
        var encoding: String?
    }

    /// `body` as it may be printed, or `nil` when it must only be summarised (its length).
    ///
    /// - A body declared `application/json` (or `…+json`) must be JSON: the value of every
    ///   object member whose name is secret, at any depth, becomes `"REDACTED"` (objects and
    ///   arrays included); everything else is kept byte for byte, whitespace too. JSON in UTF-16
    ///   or UTF-32 (RFC 8259, RFC 4627), with or without a byte-order mark, is recognised by the
    ///   mark or by its pattern of zero bytes, decoded strictly, redacted the same way and
    ///   returned as UTF-8.
    /// - A body declared `application/x-www-form-urlencoded` is read as UTF-8 `name=value` pairs
    ///   separated by `&`: the value of every secret name becomes `REDACTED`. A form with a zero
    ///   byte (a form in UTF-16, say) is not printed.
    /// - A body without a `Content-Type` is JSON when it reads as a JSON object or array (in any
    ///   of the encodings above), and a form when it is UTF-8 with a `=` and only the characters
    ///   of an encoded query (letters, digits, `-._~`, `%`, `+`, `=`, `&` and RFC 3986
    ///   sub-delimiters).
    /// - Anything else (other media types, text that cannot be decoded, invalid JSON, JSON
    ///   nested deeper than ``maxJSONDepth``) gives `nil`.
    static func printableBody(_ body: Data, contentType: String?) -> PrintableBody? {
        let mediaType = contentType.map { type in
            (type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: .whitespaces).lowercased()
        }
        let isJSON = mediaType.map { $0 == "application/json" || ($0.hasPrefix("application/") && $0.hasSuffix("+json")) }
        if isJSON != false, let decoded = JSONText(body) {
            let start = decoded.utf8.first { !Self.isJSONWhitespace($0) }
            if isJSON == true || start == UInt8(ascii: "{") || start == UInt8(ascii: "[") {
                return redact(json: decoded.utf8).map { PrintableBody(text: $0, encoding: decoded.encoding) }
            }
        }
        if isJSON == true { return nil }
        guard !body.contains(0), let text = String(data: body, encoding: .utf8) else { return nil }
        guard let mediaType else {
            if text.contains("="), text.utf8.allSatisfy(isFormByte) { return PrintableBody(text: redact(form: text), encoding: nil) }
            return nil
        }
        return mediaType == "application/x-www-form-urlencoded" ? PrintableBody(text: redact(form: text), encoding: nil) : nil
    }

    /// A JSON text decoded from the Unicode encoding RFC 8259 and RFC 4627 allow, found by its
    /// byte-order mark or, without one, by the pattern of zero bytes in its first four (JSON
    /// text starts with two ASCII characters): `00 00 00 xx` is UTF-32BE, `xx 00 00 00`
    /// UTF-32LE, `00 xx` UTF-16BE, `xx 00` UTF-16LE, anything else UTF-8. Decoding is strict: an
    /// unpaired surrogate, a code point beyond Unicode or a truncated unit fails.
    struct JSONText {
        /// The text, as UTF-8, without its byte-order mark.
        let utf8: Data
        /// The encoding's name when it is not UTF-8 without a mark (see ``PrintableBody``).
        let encoding: String?

        init?(_ body: Data) {
            let bytes = [UInt8](body)
            guard let (text, encoding) = Self.decoded(bytes) else {
                // UTF-8 without a mark: the body byte for byte. A zero byte has no place in JSON.
                guard !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil else { return nil }
                utf8 = body
                self.encoding = nil
                return
            }
            guard let text, !text.utf8.contains(0) else { return nil }
            utf8 = Data(text.utf8)
            self.encoding = encoding
        }

        /// The text of `bytes` and its encoding's name when they are not UTF-8 without a mark
        /// (the text `nil` when they do not decode); `nil` for UTF-8 without a mark.
        private static func decoded(_ bytes: [UInt8]) -> (String?, String)? {
            let head = bytes.prefix(4) + [UInt8](repeating: 0xAA, count: max(0, 4 - bytes.count))
            switch (head[0], head[1], head[2], head[3]) {
            case (0, 0, 0xFE, 0xFF): return (utf32(bytes.dropFirst(4), bigEndian: true), "UTF-32BE")
            case (0xFF, 0xFE, 0, 0): return (utf32(bytes.dropFirst(4), bigEndian: false), "UTF-32LE")
            case (0xFE, 0xFF, _, _): return (utf16(bytes.dropFirst(2), bigEndian: true), "UTF-16BE")
            case (0xFF, 0xFE, _, _): return (utf16(bytes.dropFirst(2), bigEndian: false), "UTF-16LE")
            case (0xEF, 0xBB, 0xBF, _): return (String(validating: bytes.dropFirst(3), as: UTF8.self), "UTF-8")
            case (0, 0, 0, _) where bytes.count >= 4: return (utf32(bytes[...], bigEndian: true), "UTF-32BE")
            case (_, 0, 0, 0) where bytes.count >= 4: return (utf32(bytes[...], bigEndian: false), "UTF-32LE")
            case (0, _, _, _) where bytes.count >= 2: return (utf16(bytes[...], bigEndian: true), "UTF-16BE")
            case (_, 0, _, _) where bytes.count >= 2: return (utf16(bytes[...], bigEndian: false), "UTF-16LE")
            default: return nil
            }
        }

        private static func utf16(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> String? {
            guard bytes.count.isMultiple(of: 2) else { return nil }
            let units = stride(from: bytes.startIndex, to: bytes.endIndex, by: 2).map { index in
                let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
                return bigEndian ? first << 8 | second : second << 8 | first
            }
            return String(validating: units, as: UTF16.self)
        }

        private static func utf32(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> String? {
            guard bytes.count.isMultiple(of: 4) else { return nil }
            let units = stride(from: bytes.startIndex, to: bytes.endIndex, by: 4).map { index in
                let word = bytes[index..<index + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                return bigEndian ? word : word.byteSwapped
            }
            return String(validating: units, as: UTF32.self)
        }
    }

    /// `text`, a URL-encoded form, with the value of every field whose name is secret redacted.
    static func redact(form text: String) -> String {
        text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> Substring in
            guard let equals = pair.firstIndex(of: "="),
                  isSensitiveName(pair[..<equals].replacingOccurrences(of: "+", with: " "))
            else { return pair }
            return pair[...equals] + placeholder
        }.joined(separator: "&")
    }

    /// The deepest nesting of objects and arrays a JSON body may have to be printed.
    static let maxJSONDepth = 64

    /// `json` with the value of every object member whose name is secret replaced by
    /// `"REDACTED"`, the rest byte for byte; `nil` if it is not valid JSON or nests deeper than
    /// ``maxJSONDepth``.
    static func redact(json: Data) -> String? {
        guard (try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])) != nil else { return nil }
        var scanner = JSONRedactor(bytes: Array(json))
        guard scanner.value(copying: true, depth: 0) else { return nil }
        return String(decoding: scanner.output, as: UTF8.self)
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// The bytes of an encoded query: unreserved, `%`, and RFC 3986's sub-delimiters, `:`, `@`,
    /// `/` and `?`.
    private static func isFormByte(_ byte: UInt8) -> Bool {
        HTTPSyntax.isUnreserved(byte) || "%!$&'()*+,;=:@/?".utf8.contains(byte)
    }

    /// Copies valid JSON, replacing the values of secret members. Works on bytes: every
    /// delimiter is ASCII, and a string is copied whole.
    private struct JSONRedactor {
        let bytes: [UInt8]
        var index = 0
        var output: [UInt8] = []

        init(bytes: [UInt8]) {
            self.bytes = bytes
            output.reserveCapacity(bytes.count)
        }

        /// Reads one value (after any whitespace), appending it to the output when `copying`.
        /// `false` if it nests too deep.
        mutating func value(copying: Bool, depth: Int) -> Bool {
            whitespace(copying: copying)
            guard index < bytes.count else { return true }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                guard depth < Redaction.maxJSONDepth else { return false }
                return object(copying: copying, depth: depth + 1)
            case UInt8(ascii: "["):
                guard depth < Redaction.maxJSONDepth else { return false }
                take(copying: copying)
                whitespace(copying: copying)
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    take(copying: copying)
                    return true
                }
                while index < bytes.count {
                    guard value(copying: copying, depth: depth + 1) else { return false }
                    whitespace(copying: copying)
                    guard index < bytes.count else { return true }
                    let delimiter = bytes[index]
                    take(copying: copying)
                    if delimiter == UInt8(ascii: "]") { return true }
                }
                return true
            case UInt8(ascii: "\""):
                _ = string(copying: copying)
                return true
            default:
                // A number or a literal: up to the next delimiter or whitespace.
                while index < bytes.count, !",]} \t\r\n".utf8.contains(bytes[index]) { take(copying: copying) }
                return true
            }
        }

        /// An object, from its `{`.
        private mutating func object(copying: Bool, depth: Int) -> Bool {
            take(copying: copying)
            whitespace(copying: copying)
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                take(copying: copying)
                return true
            }
            while index < bytes.count {
                whitespace(copying: copying)
                let name = string(copying: copying)
                whitespace(copying: copying)
                take(copying: copying) // the colon
                if copying, Redaction.isSensitiveName(name) {
                    whitespace(copying: true)
                    guard value(copying: false, depth: depth) else { return false }
                    output += "\"\(Redaction.placeholder)\"".utf8
                } else {
                    guard value(copying: copying, depth: depth) else { return false }
                }
                whitespace(copying: copying)
                guard index < bytes.count else { return true }
                let delimiter = bytes[index]
                take(copying: copying)
                if delimiter == UInt8(ascii: "}") { return true }
            }
            return true
        }

        /// A string, from its opening quote to its closing one; returns it decoded.
        private mutating func string(copying: Bool) -> String {
            let start = index
            take(copying: copying)
            var sawEscape = false
            var escapeNext = false
            while index < bytes.count {
                let byte = bytes[index]
                take(copying: copying)
                if escapeNext {
                    escapeNext = false
                } else if byte == UInt8(ascii: "\\") {
                    escapeNext = true
                    sawEscape = true
                } else if byte == UInt8(ascii: "\"") {
                    break
                }
            }
            let token = bytes[start..<index]
            if !sawEscape { return String(decoding: token.dropFirst().dropLast(), as: UTF8.self) }
            return (try? JSONSerialization.jsonObject(with: Data(token), options: [.fragmentsAllowed])) as? String ?? ""
        }

        private mutating func whitespace(copying: Bool) {
            while index < bytes.count, Redaction.isJSONWhitespace(bytes[index]) { take(copying: copying) }
        }

        private mutating func take(copying: Bool) {
            if copying { output.append(bytes[index]) }
            index += 1
        }
    }
}
