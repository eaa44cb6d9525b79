import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps credentials out of everything Transit prints: error descriptions and messages, and any
/// rendering of a request's URL or headers (such as a cURL command). Every description Transit
/// makes goes through it; use it in your own logs and ``HTTPEventMonitor``s too.
///
/// What is redacted:
/// - **URL user-info**: `https://alice:pa55@host/…` is shown as `https://***@host/…`.
/// - **Query and fragment values whose name looks secret**:
///   `?page=2&access_token=abc` is shown as `?page=2&access_token=REDACTED`. A fragment of
///   `name=value` pairs is treated the same way (OAuth's implicit flow returns tokens there).
/// - **Header values** of `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie` and of
///   any header whose name looks secret (`X-API-Key`, `X-Auth-Token`, …); the scheme of an
///   `Authorization` value is kept (`Bearer REDACTED`), since it helps debugging and is not
///   secret. The same headers are dropped from a request redirected to another origin, and
///   partition TransitCache's HTTP cache (a response stored for one value is served only to
///   requests with the same value, and the value is kept on disk as a keyed digest only).
/// - **Body fields** whose name looks secret, in a URL-encoded form or JSON body rendered by
///   `curlDescription(maxBodyBytes:)`; any other body is summarised, never printed.
///
/// A name **looks secret** when, case-insensitively and with camelCase, `-`, `.` and spaces read
/// as `_`, it is or ends with `token`, `access_token`, `refresh_token`, `id_token`, `key`,
/// `api_key`, `apikey`, `password`, `passwd`, `secret`, `client_secret`, `assertion`,
/// `signature`, `sig`, `auth`, `cookie`, `session`, `session_id` and a few more (`x-api-key`,
/// `X-Amz-Signature`, `clientSecret`, `client_assertion`); `code`, `device_code`, `user_code` and
/// `otp` count as whole names only. A percent-encoded name is decoded first. Redacted values read
/// `REDACTED`.
///
/// Everything else is kept byte for byte, so a redacted URL still tells which endpoint failed.
/// The functions are pure and may be called from any thread.
public enum Redaction {
    /// What a secret value is replaced with.
    static let placeholder = "REDACTED"

    /// What URL user-info (`user:password`) is replaced with.
    static let userInfoPlaceholder = "***"

    /// Names (or name endings) of query items, form and JSON fields and headers whose values are
    /// secret. A name matches if, once normalised (camelCase split, lower-cased, `-`, `.` and
    /// spaces read as `_`), it equals one of these or ends with `_` and one of these.
    ///
    /// This one list decides everything secret in Transit: what descriptions, cURL renderings
    /// and logs redact (URL queries, form and JSON bodies, headers), which headers a redirect
    /// to another origin drops (see ``RedirectPolicy``), and which request headers partition the
    /// HTTP cache (see ``isSecretHeader(_:additional:)``).
    static let sensitiveWords: [String] = [
        "token", "key", "apikey", "accesstoken", "authtoken", "password", "passwd", "pwd", "passphrase", "secret",
        "signature", "sig", "auth", "authorization", "credential", "credentials", "cookie",
        "session", "sessionid", "session_id", "assertion",
    ]

    /// Names whose values are secret only as the whole name, not as the end of a longer one: an
    /// OAuth authorization or device `code` and a one-time password are secrets, a `zip_code` or
    /// an `error_code` is not.
    static let sensitiveExactNames: Set<String> = ["code", "device_code", "user_code", "otp"]

    /// Headers whose values are always secret, whatever ``isSensitiveName(_:)`` says.
    static let sensitiveHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `true` if a query item, form or JSON field, or header named `name` carries a secret:
    /// `token`, `access_token`, `refresh_token`, `id_token`, `key`, `api_key`, `apikey`,
    /// `password`, `passwd`, `secret`, `client_secret`, `assertion`, `signature`, `sig`, `auth`,
    /// `cookie`, `session` and a few more, case-insensitively, alone or at the end of a longer
    /// name (`x-api-key`, `X-Amz-Signature`, `clientSecret`, `client_assertion`); and `code`,
    /// `device_code`, `user_code` and `otp` as whole names only. A percent-encoded name is
    /// decoded first.
    static func isSensitiveName(_ name: some StringProtocol) -> Bool {
        let normalised = normalise(HTTPSyntax.percentDecoded(String(name)))
        if sensitiveExactNames.contains(normalised) { return true }
        return sensitiveWords.contains { word in
            normalised == word || (normalised.hasSuffix(word) && normalised.dropLast(word.count).hasSuffix("_"))
        }
    }

    /// `true` if the header `field` carries a secret: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `Set-Cookie`, or a name ``isSensitiveName(_:)`` accepts. Case-insensitive.
    static func isSensitiveHeader(_ field: String) -> Bool {
        sensitiveHeaders.contains(field.lowercased()) || isSensitiveName(field)
    }

    /// `true` if the header `field` carries a credential: one ``isSensitiveHeader(_:)`` accepts,
    /// or one of `additional` (lower-cased names: a client's
    /// ``HTTPClient/Configuration/sensitiveHeaders``, a request's
    /// ``TransportRequest/sensitiveHeaders``). The one test of a secret header everywhere in
    /// Transit: what descriptions redact, what a redirect to another origin drops, and what the
    /// HTTP cache partitions its responses by and never writes to disk.
    package static func isSecretHeader(_ field: String, additional: Set<String>) -> Bool {
        (!additional.isEmpty && additional.contains(field.lowercased())) || isSensitiveHeader(field)
    }

    /// `value` as it may be printed for the header `field`: ``placeholder`` for a sensitive header
    /// (keeping the scheme of an `Authorization` or `Proxy-Authorization` value, as in
    /// `Bearer REDACTED`), the value itself otherwise.
    static func redact(headerValue value: String, forField field: String) -> String {
        guard isSensitiveHeader(field) else { return value }
        let lowered = field.lowercased()
        if lowered == "authorization" || lowered == "proxy-authorization",
           let space = value.firstIndex(of: " "), HTTPSyntax.isToken(String(value[..<space])) {
            return "\(value[..<space]) \(placeholder)"
        }
        return placeholder
    }

    /// `headers` with the value of every sensitive header redacted: `Authorization`,
    /// `Proxy-Authorization`, `Cookie`, `Set-Cookie` and every name that looks secret show
    /// `REDACTED`, keeping the scheme of an `Authorization` or `Proxy-Authorization` value
    /// (`Bearer REDACTED`). Names are kept as they are. For a list of fields (a head's
    /// ``HTTPResponseHead/fields``), pass one field at a time.
    public static func redact(headers: [String: String]) -> [String: String] {
        var redacted = headers
        for (field, value) in headers where isSensitiveHeader(field) {
            redacted[field] = redact(headerValue: value, forField: field)
        }
        return redacted
    }

    /// `url`'s absolute string with its user-info and secret query and fragment values redacted.
    static func redact(url: URL) -> String {
        redact(urlString: url.absoluteString)
    }

    /// `text`, read as one URL or relative reference (`posts?token=abc`), with its user-info and
    /// secret query and fragment values redacted. Works on text that is not a valid URL too, so
    /// a URL that was refused can still be named in the error.
    public static func redact(urlString text: String) -> String {
        // Without `@`, `?` and `#` there is no user-info, query or fragment: nothing to redact.
        // (Each is ASCII, so its byte in UTF-8 is that scalar and nothing else.)
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else {
            return text
        }
        // Delimiters are looked for among Unicode scalars, as URL parsers do, not among
        // Characters: a combining mark after `=`, `@`, `&`, `?` or `#` would hide it otherwise.
        var rest = Substring(text).unicodeScalars
        var result = String.UnicodeScalarView()
        if let authority = authorityRange(in: rest) {
            if let at = rest[authority].lastIndex(of: "@") {
                result += rest[..<authority.lowerBound]
                result += userInfoPlaceholder.unicodeScalars
                result += rest[at..<authority.upperBound]
                rest = rest[authority.upperBound...]
            }
        }
        var fragment: Scalars?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        if let mark = rest.firstIndex(of: "?") {
            result += rest[...mark]
            result += redact(pairs: rest[rest.index(after: mark)...])
        } else {
            result += rest
        }
        if let fragment {
            result += "#".unicodeScalars
            result += redact(pairs: fragment)
        }
        return String(result)
    }

    private typealias Scalars = Substring.UnicodeScalarView

    /// `text` with every URL in it (anything of the form `scheme://…`, up to the next
    /// whitespace, quote or angle bracket) redacted as ``redact(urlString:)`` does. For messages
    /// that may quote a URL, such as an underlying error's description.
    public static func redactingURLs(in text: String) -> String {
        guard text.contains("://") else { return text }
        var result = ""
        var rest = Substring(text)
        while let separator = rest.range(of: "://") {
            // Walk back over the scheme's characters, forward to the end of the URL.
            var start = separator.lowerBound
            while start > rest.startIndex {
                let previous = rest.index(before: start)
                guard isSchemeCharacter(rest[previous]) else { break }
                start = previous
            }
            let end = rest[separator.upperBound...].firstIndex(where: endsURLInText) ?? rest.endIndex
            result += rest[..<start]
            result += redact(urlString: String(rest[start..<end]))
            rest = rest[end...]
        }
        return result + rest
    }

    // MARK: Helpers

    /// The authority (`user:password@host:port`) of `text`: what follows `scheme:` and up to three
    /// slashes (libcurl reads an authority after `http:/` and `http:` too, so a mistyped URL keeps
    /// no credentials either), or the start of a network-path reference (`//user@host/…`).
    private static func authorityRange(in text: Scalars) -> Range<String.Index>? {
        var start: String.Index
        if text.starts(with: "//".unicodeScalars) {
            start = text.index(text.startIndex, offsetBy: 2)
        } else {
            guard let colon = text.firstIndex(of: ":"), colon > text.startIndex,
                  let first = text.first, first.isASCII, first.properties.isAlphabetic,
                  text[..<colon].allSatisfy({ isSchemeCharacter(Character($0)) })
            else { return nil }
            start = text.index(after: colon)
            for _ in 0..<3 where start < text.endIndex && text[start] == "/" {
                start = text.index(after: start)
            }
        }
        let end = text[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        return start..<end
    }

    /// `name=value` pairs separated by `&` with the value of every sensitive name redacted.
    private static func redact(pairs: Scalars) -> String.UnicodeScalarView {
        var result = String.UnicodeScalarView()
        for (index, pair) in pairs.split(separator: "&", omittingEmptySubsequences: false).enumerated() {
            if index > 0 { result.append("&") }
            if let equals = pair.firstIndex(of: "="), isSensitiveName(String(String.UnicodeScalarView(pair[..<equals]))) {
                result += pair[...equals]
                result += placeholder.unicodeScalars
            } else {
                result += pair
            }
        }
        return result
    }

    private static func isSchemeCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "+" || character == "-" || character == ".")
    }

    /// Whitespace, quotes and angle brackets end a URL in text. Characters that a valid URL never
    /// has raw (`{}|\^`) do not: URL parsers re-encode them, so `https://a{b:pw@host` is read
    /// with the password `pw`.
    private static func endsURLInText(_ character: Character) -> Bool {
        character.isWhitespace || "\"'<>`".contains(character)
    }

    /// camelCase split into words, lower-cased, with `-`, `.` and spaces read as `_`.
    private static func normalise(_ name: String) -> String {
        var result = ""
        var previous: Character?
        for character in name {
            if character.isUppercase, let previous, previous.isLowercase || previous.isNumber {
                result += "_"
            }
            switch character {
            case "-", ".", " ": result += "_"
            default: result += character.lowercased()
            }
            previous = character
        }
        return result
    }
}

extension URL {
    /// The URL as it may be written to logs and error messages: its user-info and the values of
    /// query items named like secrets are redacted (see ``Redaction``).
    public var redactedForLogging: String {
        Redaction.redact(url: self)
    }
}
