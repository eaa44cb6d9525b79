// Fuzz target for the HTTP cache's `Vary` handling (Sources/TransitCache/HTTP/StoredResponse.swift):
// which request headers a stored response varies on (`varyNames`), the values the storing request
// sent (`varyValues`), and `matches(_:)`, which decides whether a later request may get the
// stored response.
//
// The input: one choice byte, then lines (LF): the response's `Vary` value (sent as one field, or
// as two split at its first comma), then the storing request's headers as `name:value`; the last
// line is also the value a changed request sends.
//
// Invariants:
// - no crash, whatever the bytes of the Vary value, the header names and the values;
// - the names are the Vary value's comma-separated elements without OWS (read on UTF-8 bytes),
//   lowercased and sorted;
// - the stored response matches the request it was stored for, unless it varies on `*`
//   (RFC 9111 §4.1: such a response never matches), and so does its JSON round trip (what the
//   cache reads back from the record's metadata), which decodes to the same value;
// - the case of the header names and optional whitespace around the commas of the values (and at
//   their ends) change nothing: the request written that way matches too;
// - a request that changes, adds or removes one varied header matches exactly when every varied
//   header's value is the same list: equal after splitting at commas and removing OWS (on UTF-8
//   bytes, as HTTP reads them) — so a different value never matches;
// - a `304 Not Modified` merged into the stored response (`updated(with:request:…)`) leaves it
//   varying on the `Vary` its headers now hold, and it matches the request that revalidated it
//   (unless that Vary is `*`).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let url = URL(string: "https://api.example.com/greeting")!

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let choice = input.byte()
    var lines = input.bytes.split(separator: 10, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let varyValue = lines.isEmpty ? "" : lines.removeFirst()
    let newValue = lines.last ?? ""

    var request = URLRequest(url: url)
    for line in lines {
        let name: Substring, value: Substring
        if let colon = line.firstIndex(of: ":") {
            name = line[..<colon]
            value = line[line.index(after: colon)...]
        } else {
            name = Substring(line)
            value = ""
        }
        request.setValue(String(value), forHTTPHeaderField: String(name))
    }

    // The Vary field in some spelling; with bit 6, the value sent as two fields, split at its
    // first comma (a head joins repeated fields with ", ").
    let varyField = ["Vary", "vary", "VARY", "vARY"][Int(choice & 3)]
    var fields = [HTTPField(name: "Cache-Control", value: "max-age=60")]
    let varyBytes = Array(varyValue.utf8)
    if choice & 0x40 != 0, let comma = varyBytes.firstIndex(of: UInt8(ascii: ",")) {
        // Split as bytes: String.index(after:) would step over a combining mark after the comma.
        fields.append(HTTPField(name: varyField, value: String(decoding: varyBytes[..<comma], as: UTF8.self)))
        fields.append(HTTPField(name: "Vary", value: String(decoding: varyBytes[(comma + 1)...], as: UTF8.self)))
    } else {
        fields.append(HTTPField(name: varyField, value: varyValue))
    }
    let response = HTTPResponseHead(url: url, statusCode: 200, fields: fields)
    let stored = StoredResponse(url: url, response: response, request: request, requestTime: 1_000, responseTime: 2_000)
    let names = stored.varyNames
    let star = names.contains("*")

    // The names.
    let expected = elements(varyValue).map { $0.lowercased() }.filter { !$0.isEmpty }.sorted()
    require(names == expected, "Vary \(varyValue.debugDescription) reads as \(names), not \(expected)")

    // The request it was stored for, directly and through the record's metadata.
    require(stored.matches(request) == !star, "the response stored for a request \(star ? "matches it with Vary: *" : "does not match it") (Vary names \(names))")
    let decoded: StoredResponse
    do {
        decoded = try JSONDecoder().decode(StoredResponse.self, from: JSONEncoder().encode(stored))
    } catch {
        fail("the stored response does not round-trip through JSON: \(error)")
    }
    require(decoded == stored, "the stored response reads back from JSON as \(decoded), not \(stored)")
    require(decoded.matches(request) == !star, "the stored response read back from JSON \(star ? "matches with Vary: *" : "does not match its request")")

    // The same request, written with other name case and OWS.
    var generator = FuzzGenerator(seed: bytes)
    var respelled = URLRequest(url: url)
    for (name, value) in request.allHTTPHeaderFields ?? [:] {
        let otherCase = String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
            guard scalar.isASCII, generator.next() & 1 == 1 else { return scalar }
            let text = String(scalar)
            return (text == text.lowercased() ? text.uppercased() : text.lowercased()).unicodeScalars.first!
        }))
        respelled.setValue(withOWS(value, &generator), forHTTPHeaderField: otherCase)
    }
    require(stored.matches(respelled) == !star,
            "the same headers with other case and OWS \(star ? "match with Vary: *" : "do not match"): \((respelled.allHTTPHeaderFields ?? [:]).debugDescription) against the stored \(stored.varyValues.debugDescription)")

    // One varied header changed, added or removed.
    if !names.isEmpty {
        let name = names[Int((choice >> 2) & 0x0F) % names.count]
        var changed = request
        changed.setValue(choice & 0x80 == 0 ? newValue : nil, forHTTPHeaderField: name)
        // A secret header (any name Transit's one list of secret names holds, as the Vary names
        // it or as the request spells it) varies by presence only: its value is matched by the
        // cache's credential partition, never stored.
        let isSecret = { (name: String) -> Bool in
            let lowered = name.lowercased()
            let spelled = request.allHTTPHeaderFields?.keys.first { $0.lowercased() == lowered } ?? lowered
            return Redaction.isSecretHeader(lowered, additional: []) || Redaction.isSecretHeader(spelled, additional: [])
        }
        let same = names.allSatisfy { name in
            if isSecret(name) {
                return (changed.value(forHTTPHeaderField: name) == nil) == (request.value(forHTTPHeaderField: name) == nil)
            }
            return normalized(changed.value(forHTTPHeaderField: name)) == normalized(request.value(forHTTPHeaderField: name))
        }
        require(stored.matches(changed) == (same && !star),
                "with \(name) \(changed.value(forHTTPHeaderField: name).debugDescription) instead of \(request.value(forHTTPHeaderField: name).debugDescription) the stored response \(stored.matches(changed) ? "matches" : "does not match")")
    }

    // A 304 that names a Vary of its own: the Vary matching uses is the one the headers hold.
    let notModifiedVary = newValue
    do {
        let notModified = HTTPResponseHead(url: url, statusCode: 304, headerFields: ["Vary": notModifiedVary, "ETag": "\"2\""])
        let updated = stored.updated(with: notModified, request: request, requestTime: 3_000, responseTime: 4_000)
        let updatedNames = StoredResponse.varyNames(updated.header("Vary"))
        require(updated.varyNames == updatedNames, "after a 304 with Vary \(notModifiedVary.debugDescription) the response varies on \(updated.varyNames), not on its Vary header's \(updatedNames)")
        require(updated.matches(request) == !updatedNames.contains("*"), "after a 304 the response \(updated.matches(request) ? "matches" : "does not match") the request that revalidated it (Vary \(updatedNames))")
    }
}

/// The elements of a comma-separated list, without OWS: on UTF-8 bytes, as HTTP reads them.
private func elements(_ value: String) -> [String] {
    value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { element in
        let isOWS = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let start = element.firstIndex(where: { !isOWS($0) }), let end = element.lastIndex(where: { !isOWS($0) }) else { return "" }
        return String(decoding: element[start...end], as: UTF8.self)
    }
}

/// A field value as a list: equal for two values that differ only in OWS around commas.
private func normalized(_ value: String?) -> [String]? {
    value.map(elements)
}

/// `value` with spaces and tabs added around its commas and at its ends.
private func withOWS(_ value: String, _ generator: inout FuzzGenerator) -> String {
    func ows() -> String { ["", " ", "\t", "  ", " \t "][Int(generator.next() % 5)] }
    return ows() + elements(value).map { ows() + $0 + ows() }.joined(separator: ",") + ows()
}
