// Fuzz target for `Redaction` (Sources/Transit/Requests/Redaction.swift), which reads URLs in
// text to keep credentials out of logs and error messages. The input is the text, as UTF-8; the
// first byte chooses between `redact(urlString:)` (even) and `redactingURLs(in:)` (odd).
//
// Invariants (the oracles are Foundation's and libcurl's readings, what a transport would use):
// - redacting twice changes nothing more than redacting once;
// - if Foundation or libcurl reads a password in the text, it reads none in the redacted text,
//   and the user it reads there (if any) is the placeholder;
// - every query item that Foundation reads in the redacted text under a sensitive name has no
//   value other than the placeholder;
// - text without "://" goes through `redactingURLs(in:)` unchanged, and no word of its output (a
//   URL ends at whitespace, a quote or an angle bracket) is read by Foundation with a password.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

func fuzzTarget(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    if mode % 2 == 0 {
        let redacted = Redaction.redact(urlString: text)
        require(Redaction.redact(urlString: redacted) == redacted, "redacting again changed \(redacted.debugDescription)")
        checkCredentials(original: text, redacted: redacted)
        checkQuery(redacted)
    } else {
        let redacted = Redaction.redactingURLs(in: text)
        require(Redaction.redactingURLs(in: redacted) == redacted, "redacting again changed \(redacted.debugDescription)")
        if !text.contains("://") {
            require(redacted == text, "text without a URL changed to \(redacted.debugDescription)")
        }
        // Each word (between whitespace, quotes and angle brackets, which end a URL in text) that
        // Foundation reads as a URL keeps no credentials.
        for word in redacted.split(whereSeparator: { $0.isWhitespace || "\"'<>`".contains($0) }) {
            // The URLs it documents finding: from `scheme://` to the end of the word.
            guard let separator = word.range(of: "://") else { continue }
            var start = separator.lowerBound
            while start > word.startIndex, word[word.index(before: start)].isASCII,
                  word[word.index(before: start)].isLetter || word[word.index(before: start)].isNumber || "+-.".contains(word[word.index(before: start)]) {
                start = word.index(before: start)
            }
            let url = String(word[start...])
            if let components = URLComponents(string: url) {
                require(components.percentEncodedPassword == nil, "Foundation reads a password in \(url.debugDescription), from the redacted text \(redacted.debugDescription)")
            }
        }
    }
}

private func checkCredentials(original: String, redacted: String) {
    if let before = URLComponents(string: original), before.percentEncodedPassword != nil || before.percentEncodedUser != nil {
        let after = URLComponents(string: redacted)
        require(after?.percentEncodedPassword == nil, "Foundation reads a password in the redacted text \(redacted.debugDescription)")
        if let user = after?.percentEncodedUser {
            require(user == Redaction.userInfoPlaceholder || user.removingPercentEncoding == Redaction.userInfoPlaceholder,
                    "Foundation reads the user \(user.debugDescription) in the redacted text \(redacted.debugDescription)")
        }
    }
    if case .success(let before) = Curl.parse(original), before.user != nil || before.password != nil {
        if case .success(let after) = Curl.parse(redacted) {
            require(after.password == nil, "libcurl reads a password in the redacted text \(redacted.debugDescription)")
            if let user = after.user {
                require(user == Redaction.userInfoPlaceholder, "libcurl reads the user \(user.debugDescription) in the redacted text \(redacted.debugDescription)")
            }
        }
    }
}

private func checkQuery(_ redacted: String) {
    guard let items = URLComponents(string: redacted)?.queryItems else { return }
    for item in items where Redaction.isSensitiveName(item.name) {
        if let value = item.value, !value.isEmpty {
            require(value == Redaction.placeholder, "the redacted text \(redacted.debugDescription) still has \(item.name)=\(value)")
        }
    }
}
