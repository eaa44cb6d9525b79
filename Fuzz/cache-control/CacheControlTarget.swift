// Fuzz target for `CacheControl` (Sources/TransitCache/HTTP/CacheControl.swift), the
// Cache-Control reader of the HTTP cache. The input is the field value, as UTF-8.
//
// Invariants:
// - every delta-seconds value read is in 0...maximumDeltaSeconds (`max-stale` without a value
//   is Int.max);
// - surrounding OWS and the case of ASCII text change nothing; when the quotes pair up, neither
//   does an empty list element before or after, nor the value joined after itself (two fields
//   with the same directives);
// - the directives read, written back in canonical form, read back the same.
import Foundation

func fuzzTarget(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let read = CacheControl(text)

    for value in [read.maxAge, read.minFresh, read.staleIfError] {
        if let value { require((0...CacheControl.maximumDeltaSeconds).contains(value), "a delta-seconds value \(value) out of range") }
    }
    if let maxStale = read.maxStale {
        require((0...CacheControl.maximumDeltaSeconds).contains(maxStale) || maxStale == Int.max, "max-stale \(maxStale) out of range")
    }

    // An unterminated quoted string swallows whatever follows it, so list elements are added only
    // to text whose quotes pair up.
    let quotesPair = !endsInsideQuotes(text)
    let variants = quotesPair ? [" \t" + text + " ", text + ", ", ", " + text, text + ", " + text] : [" \t" + text + " "]
    let variant = variants[bytes.count % variants.count]
    require(CacheControl(variant) == read, "\(variant.debugDescription) reads \(CacheControl(variant)), \(text.debugDescription) reads \(read)")
    if text.utf8.allSatisfy({ $0 < 0x80 }) {
        let upper = text.uppercased()
        require(CacheControl(upper) == read, "upper case \(upper.debugDescription) reads \(CacheControl(upper)), not \(read)")
    }

    let canonical = write(read)
    require(CacheControl(canonical) == read, "written back as \(canonical.debugDescription) it reads \(CacheControl(canonical)), not \(read)")
}

/// `true` if a quoted string (with `\\` escapes inside it) is still open at the end of `text`.
private func endsInsideQuotes(_ text: String) -> Bool {
    var inQuotes = false
    var escaped = false
    for character in text {
        if escaped {
            escaped = false
        } else if character == "\\" && inQuotes {
            escaped = true
        } else if character == "\"" {
            inQuotes.toggle()
        }
    }
    return inQuotes || escaped
}

private func write(_ directives: CacheControl) -> String {
    var parts: [String] = []
    if let value = directives.maxAge { parts.append("max-age=\(value)") }
    if let value = directives.maxStale { parts.append(value == Int.max ? "max-stale" : "max-stale=\(value)") }
    if let value = directives.minFresh { parts.append("min-fresh=\(value)") }
    if let value = directives.staleIfError { parts.append("stale-if-error=\"\(value)\"") }
    if directives.noCache { parts.append("no-cache") }
    if directives.noStore { parts.append("No-Store") }
    if directives.onlyIfCached { parts.append("only-if-cached") }
    if directives.mustRevalidate { parts.append("must-revalidate") }
    if directives.isPublic { parts.append("public") }
    if directives.isPrivate { parts.append("private=\"Set-Cookie, Authorization\"") }
    return parts.joined(separator: " , ")
}
