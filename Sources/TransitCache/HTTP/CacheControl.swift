import Foundation

/// The directives of a `Cache-Control` header field (RFC 9111 §5.2), of a request or a response.
///
/// Directive names are case-insensitive; values may be tokens or quoted strings. A directive
/// whose delta-seconds value does not parse is read conservatively: `max-age=abc` as `max-age=0`
/// (stale at once), `min-fresh=abc` as absent. A directive given more than once, in one field or
/// several, is read as its first occurrence (RFC 9111 §4.2.1). Qualified `no-cache="Set-Cookie"`
/// is read as plain `no-cache` (always revalidate), which is stricter than the RFC requires;
/// qualified `private` changes nothing for a private cache. `s-maxage` and `proxy-revalidate` are
/// for shared caches and are ignored.
struct CacheControl: Equatable, Sendable {
    /// `max-age`, seconds.
    var maxAge: Int?
    /// `max-stale` (request): seconds of staleness the client accepts; `Int.max` without a value.
    var maxStale: Int?
    /// `min-fresh` (request), seconds.
    var minFresh: Int?
    /// `stale-if-error` (RFC 5861), seconds.
    var staleIfError: Int?
    var noCache = false
    var noStore = false
    var onlyIfCached = false
    var mustRevalidate = false
    var isPublic = false
    var isPrivate = false

    /// The largest delta-seconds value (RFC 9111 §1.2.2): larger values are read as this.
    static let maximumDeltaSeconds = 2_147_483_648

    /// Parses the value of one or more `Cache-Control` fields (several are joined with commas).
    init(_ value: String?) {
        guard let value else { return }
        for directive in CacheControl.split(value) {
            let (name, argument) = directive
            switch name {
            case "max-age" where maxAge == nil: maxAge = CacheControl.deltaSeconds(argument) ?? 0
            case "max-stale" where maxStale == nil: maxStale = argument == nil ? Int.max : CacheControl.deltaSeconds(argument) ?? 0
            case "min-fresh" where minFresh == nil: minFresh = CacheControl.deltaSeconds(argument)
            case "stale-if-error" where staleIfError == nil: staleIfError = CacheControl.deltaSeconds(argument)
            case "no-cache": noCache = true
            case "no-store": noStore = true
            case "only-if-cached": onlyIfCached = true
            case "must-revalidate": mustRevalidate = true
            case "public": isPublic = true
            case "private": isPrivate = true
            default: break
            }
        }
    }

    /// Reads delta-seconds: digits only; `nil` for anything else.
    static func deltaSeconds(_ text: String?) -> Int? {
        guard let text, !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        var value = 0
        for digit in text.utf8 {
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
            if value >= maximumDeltaSeconds { return maximumDeltaSeconds }
        }
        return value
    }

    /// Splits a field value into lowercased directive names and their arguments (unquoted),
    /// honouring commas inside quoted strings.
    static func split(_ value: String) -> [(String, String?)] {
        var directives: [(String, String?)] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        func flush() {
            let trimmed = current.trimmingWhitespace
            current = ""
            guard !trimmed.isEmpty else { return }
            if let equals = trimmed.firstIndex(of: "=") {
                let name = String(trimmed[..<equals]).trimmingWhitespace.lowercased()
                var argument = String(trimmed[trimmed.index(after: equals)...]).trimmingWhitespace
                if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
                    argument = String(argument.dropFirst().dropLast()).replacingOccurrences(of: "\\", with: "")
                }
                directives.append((name, argument))
            } else {
                directives.append((trimmed.lowercased(), nil))
            }
        }
        for character in value {
            if escaped {
                escaped = false
                current.append(character)
                continue
            }
            switch character {
            case "\\" where inQuotes:
                escaped = true
                current.append(character)
            case "\"":
                inQuotes.toggle()
                current.append(character)
            case "," where !inQuotes:
                flush()
            default:
                current.append(character)
            }
        }
        flush()
        return directives
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingWhitespace: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}
