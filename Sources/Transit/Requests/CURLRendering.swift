import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The request as a `curl` command line, for logs and bug reports, with secrets redacted:
    /// `Authorization`, `Proxy-Authorization`, `Cookie` and API-key-like headers show
    /// `REDACTED` (the scheme of an `Authorization` stays: `Bearer REDACTED`), and so do URL user
    /// info and query values named like secrets (`token`, `key`, `password`, `code`, …; one list,
    /// in ``Redaction``, decides everywhere).
    ///
    /// Every argument is single-quoted for a POSIX shell. A body of up to `maxBodyBytes` is shown
    /// with `--data-raw` only when it is a URL-encoded form or JSON (as its `Content-Type` says,
    /// or, without one, as it reads), with the value of every field named like a secret shown as
    /// `REDACTED`, at any depth of JSON. JSON in UTF-16 or UTF-32 (found by its byte-order mark or
    /// its pattern of zero bytes, as RFC 8259 and RFC 4627 describe) is redacted the same way and
    /// shown as UTF-8, with a note naming its encoding (`# body: 96 bytes of UTF-16LE JSON, shown
    /// as UTF-8`); a body that cannot be decoded is not shown. Any other body — larger, binary, plain text, XML,
    /// multipart, invalid JSON — is summarised (`# body: 1048576 bytes, not shown`), never
    /// printed. Headers are sorted by name, so the same request always renders the same way.
    ///
    /// - Parameters:
    ///   - maxBodyBytes: the largest body shown.
    ///   - sensitiveHeaders: more header names whose values are secrets of your own (a session
    ///     header, say), shown as `REDACTED` too; names match case-insensitively. Pass a client's
    ///     ``HTTPClient/Configuration/sensitiveHeaders`` to redact what it drops across origins.
    public func curlDescription(maxBodyBytes: Int = 1024, sensitiveHeaders: Set<String> = []) -> String {
        var parts = ["curl"]
        let method = httpMethod ?? "GET"
        if method != "GET" { parts.append("-X \(Self.quoted(method))") }
        let ownSecrets = Set(sensitiveHeaders.map { $0.lowercased() })
        for (field, value) in (allHTTPHeaderFields ?? [:]).sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            let shown = ownSecrets.contains(field.lowercased()) ? Redaction.placeholder : Redaction.redact(headerValue: value, forField: field)
            parts.append("-H \(Self.quoted("\(field): \(shown)"))")
        }
        var trailer = ""
        if let body = httpBody, !body.isEmpty {
            if body.count <= maxBodyBytes, let shown = Redaction.printableBody(body, contentType: value(forHTTPHeaderField: "Content-Type")) {
                parts.append("--data-raw \(Self.quoted(shown.text))")
                if let encoding = shown.encoding { trailer = "  # body: \(body.count) bytes of \(encoding) JSON, shown as UTF-8" }
            } else {
                trailer = "  # body: \(body.count) bytes, not shown"
            }
        }
        parts.append(Self.quoted(url.map(Redaction.redact(url:)) ?? ""))
        return parts.joined(separator: " ") + trailer
    }

    /// `text` single-quoted for a POSIX shell (`'` becomes `'\''`); control characters are
    /// shown escaped so the rendering stays on one line.
    private static func quoted(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "'": escaped += #"'\''"#
            case "\n": escaped += #"\n"#
            case "\r": escaped += #"\r"#
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: escaped += String(format: "\\x%02X", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "'\(escaped)'"
    }
}
