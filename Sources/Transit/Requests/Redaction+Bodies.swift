import Foundation

/// Request bodies as they may be printed: a URL-encoded form or a JSON body with the value of
/// every field whose name looks secret (see ``Redaction``) redacted; any other
/// body is not printed at all.
extension Redaction {
    /// `body` as it may be printed, or `nil` when it must only be summarised (its length).
    ///
    /// - A body declared `application/json` (or `…+json`) must be JSON: the value of every
    ///   object member whose name is secret, at any depth, becomes `"REDACTED"` (objects and
    ///   arrays included); everything else is kept byte for byte, whitespace too.
    /// - A body declared `application/x-www-form-urlencoded` is read as `name=value` pairs
    ///   separated by `&`: the value of every secret name becomes `REDACTED`.
    /// - A body without a `Content-Type` is JSON when it reads as a JSON object or array, and a
    ///   form when it has a `=` and only the characters of an encoded query (letters, digits,
    ///   `-._~`, `%`, `+`, `=`, `&` and RFC 3986 sub-delimiters).
    /// - Anything else (other media types, text that is not UTF-8, invalid JSON, JSON nested
    ///   deeper than ``maxJSONDepth``) gives `nil`.
    static func printableBody(_ body: Data, contentType: String?) -> String? {
        guard let text = String(data: body, encoding: .utf8) else { return nil }
        let mediaType = contentType.map { type in
            (type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard let mediaType else {
            let start = body.first { !Self.isJSONWhitespace($0) }
            if start == UInt8(ascii: "{") || start == UInt8(ascii: "[") { return redact(json: body) }
            if text.contains("="), text.utf8.allSatisfy(isFormByte) { return redact(form: text) }
            return nil
        }
        if mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")) {
            return redact(json: body)
        }
        return mediaType == "application/x-www-form-urlencoded" ? redact(form: text) : nil
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
