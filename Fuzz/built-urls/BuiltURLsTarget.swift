// Fuzz target for `BuiltURLs` (Sources/Transit/Requests/BuiltURLs.swift), the table of recently
// built URLs in front of `URLBuilder`, keyed by the UTF-8 bytes of base and endpoint. The table
// is process-wide, so every input runs against what earlier inputs left in it.
//
// The input: a choice byte (two for the filling below), then lines (LF), each an endpoint, or `base` TAB `endpoint`; an
// endpoint alone is under the last base given (https://api.example.com/v1 at first).
//
// Invariant: the table is transparent. For every pair, in order, and for lookalikes of it —
// the endpoint and the base in Unicode NFC and NFD, with K and ; written as KELVIN SIGN and
// GREEK QUESTION MARK (canonically equal to them, so equal as `String`s, but other bytes) —
// `BuiltURLs.url(base:endpoint:)` gives exactly what `URLBuilder.url(base:endpoint:)` gives:
// the same URL (byte for byte), or a refusal for both (`URLError(.badURL)`, or
// `URLRequestError.credentialsInURL` for a base with user-info); asked again (now from the
// table), the same. Inputs that start with 0xFF 0xFF first fill the table past its capacity
// (256) with other endpoints, so the pairs run right after it empties itself (the pairs of
// earlier inputs fill it too).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated(unsafe) private var fillerRound = 0

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    if input.byte() == 0xFF, input.byte() == 0xFF {
        fillerRound += 1
        for index in 0...BuiltURLs.capacity {
            check(base: "https://filler.example/v1", endpoint: "filler/\(fillerRound)/\(index)")
        }
    }
    var base = "https://api.example.com/v1"
    for line in input.bytes.split(separator: 10, omittingEmptySubsequences: false) {
        var endpoint = String(decoding: line, as: UTF8.self)
        if let tab = line.firstIndex(of: 9) {
            base = String(decoding: line[..<tab], as: UTF8.self)
            endpoint = String(decoding: line[(tab + 1)...], as: UTF8.self)
        }
        check(base: base, endpoint: endpoint)
        for (otherBase, otherEndpoint) in lookalikes(base: base, endpoint: endpoint) {
            check(base: otherBase, endpoint: otherEndpoint)
        }
        check(base: base, endpoint: endpoint)
    }
}

/// The table's answer for a pair, twice, against the builder's.
private func check(base: String, endpoint: String) {
    let expected = Result { try URLBuilder.url(base: base, endpoint: endpoint) }
    for attempt in ["first", "second"] {
        let fromTable = Result { try BuiltURLs.url(base: base, endpoint: endpoint) }
        switch (fromTable, expected) {
        case (.success(let url), .success(let built)):
            require(url == built && url.absoluteString.utf8.elementsEqual(built.absoluteString.utf8),
                    "\(attempt) ask: the table gives \(url.absoluteString.debugDescription) for \(base.debugDescription) + \(endpoint.debugDescription), the builder \(built.absoluteString.debugDescription)")
        case (.failure(let error), .failure):
            let refusedUserInfo = if case .credentialsInURL? = error as? URLRequestError { true } else { false }
            require((error as? URLError)?.code == .badURL || refusedUserInfo, "the table threw \(error), not URLError(.badURL)")
        case (.success(let url), .failure(let error)):
            fail("\(attempt) ask: the table gives \(url.absoluteString.debugDescription) for \(base.debugDescription) + \(endpoint.debugDescription), which the builder refuses (\(error))")
        case (.failure(let error), .success(let built)):
            fail("\(attempt) ask: the table refuses (\(error)) \(base.debugDescription) + \(endpoint.debugDescription), which the builder builds as \(built.absoluteString.debugDescription)")
        }
    }
}

/// Spellings of the pair that are equal as `String`s (canonically equivalent) with other bytes.
private func lookalikes(base: String, endpoint: String) -> [(String, String)] {
    func variants(_ text: String) -> [String] {
        [text.precomposedStringWithCanonicalMapping, text.decomposedStringWithCanonicalMapping,
         text.replacingOccurrences(of: "K", with: "\u{212A}").replacingOccurrences(of: ";", with: "\u{37E}")]
            .filter { !$0.utf8.elementsEqual(text.utf8) }
    }
    return variants(endpoint).map { (base, $0) } + variants(base).map { ($0, endpoint) }
}
