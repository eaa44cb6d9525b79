// Fuzz target for the header reading of `HTTPResponseHead` (Sources/Transit/Responses/
// HTTPResponseHead.swift): the fields as a transport hands them over, read by every response —
// `Content-Length` (the body length the response-size limit and the collectors trust), lookups by
// name, the dictionary view — and `HTTPSyntax.sameFieldName`, which every lookup uses.
//
// The input: lines (LF), each a header field `name:value` (split at the first `:`; a line
// without one is a name with an empty value), decoded as UTF-8.
//
// Invariants, each against an independent reading written here:
// - `expectedContentLength` is the one number every `Content-Length` field (any ASCII case) and
//   every comma-separated element of each states — 1 to 18 decimal digits with optional spaces
//   and tabs around — or -1 when there is none, an element is empty or not such a number, or two
//   differ;
// - `sameFieldName(a, b)` holds exactly when the UTF-8 bytes are equal after ASCII lowercasing;
// - for every name sent (and its upper- and lowercased spellings) `values(forHTTPHeaderField:)`
//   is the values of the fields of that name, in order; `value(forHTTPHeaderField:)` is them
//   joined with ", " (nil for none); `allHeaderFields` has one entry per name (its first
//   spelling) with that joined value, and nothing else — names equal as Swift strings but not
//   byte for byte (canonically equivalent) share one entry and lose no value (found by this
//   target: the second name's value replaced the first's).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let url = URL(string: "https://api.example.com/v1/items")!

func fuzzTarget(_ bytes: [UInt8]) {
    let fields = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> HTTPField in
        guard let colon = line.firstIndex(of: 0x3A) else { return HTTPField(name: String(decoding: line, as: UTF8.self), value: "") }
        return HTTPField(name: String(decoding: line[..<colon], as: UTF8.self), value: String(decoding: line[(colon + 1)...], as: UTF8.self))
    }
    let head = HTTPResponseHead(url: url, statusCode: 200, fields: fields)
    require(head.fields == fields, "the fields changed")

    let expected = contentLength(fields)
    require(head.expectedContentLength == expected,
            "Content-Length of \(fields.filter { folded($0.name) == folded("Content-Length") }.map(\.value)): \(head.expectedContentLength), expected \(expected)")

    // Each check below depends only on a name's bytes, so it runs once per distinct name (the
    // checks per field made the harness quadratic in fields and 90 % of the run time).
    let keys = fields.map { folded($0.name) }
    var names: [(name: String, key: [UInt8])] = []
    var seen = Set<[UInt8]>()
    for (field, key) in zip(fields, keys) where seen.insert(Array(field.name.utf8)).inserted {
        names.append((field.name, key))
    }
    for a in names {
        for b in names {
            require(HTTPSyntax.sameFieldName(a.name, b.name) == (a.key == b.key),
                    "sameFieldName(\(a.name.debugDescription), \(b.name.debugDescription)) is \(HTTPSyntax.sameFieldName(a.name, b.name))")
        }
    }

    var groups: [[UInt8]: (first: String, values: [String])] = [:]
    for (field, key) in zip(fields, keys) {
        groups[key, default: (field.name, [])].values.append(field.value)
    }
    for (name, _) in names {
        for spelling in [name, name.uppercased(), name.lowercased()] {
            let values = groups[folded(spelling)]?.values ?? []
            require(head.values(forHTTPHeaderField: spelling) == values,
                    "values(\(spelling.debugDescription)): \(head.values(forHTTPHeaderField: spelling)), expected \(values)")
            let joined: String? = values.isEmpty ? nil : values.joined(separator: ", ")
            require(head.value(forHTTPHeaderField: spelling) == joined,
                    "value(\(spelling.debugDescription)): \(String(describing: head.value(forHTTPHeaderField: spelling))), expected \(String(describing: joined))")
        }
    }
    // One entry per name (its first spelling); names that are equal as Swift strings but not
    // byte for byte (canonically equivalent) are one key, their values joined in field order.
    var expectedAll: [String: String] = [:]
    for (field, key) in zip(fields, keys) {
        let name = groups[key]!.first
        expectedAll[name] = expectedAll[name].map { "\($0), \(field.value)" } ?? field.value
    }
    let all = head.allHeaderFields
    require(all == expectedAll, "allHeaderFields is \(all), expected \(expectedAll)")
    let distinctNames = Set(groups.values.map(\.first)).count
    require(all.count == distinctNames, "allHeaderFields has \(all.count) names, expected \(distinctNames)")
    _ = head.description
}

/// A name's UTF-8 bytes with ASCII capitals lowercased.
private func folded(_ name: String) -> [UInt8] {
    name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
}

/// The Content-Length the fields state, read with String's own splitting and trimming.
private func contentLength(_ fields: [HTTPField]) -> Int64 {
    var length: Int64?
    for field in fields where folded(field.name) == folded("content-length") {
        for element in field.value.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = element.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
            let digits = Array(trimmed)
            guard (1...18).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int64(String(decoding: digits, as: UTF8.self)) else { return -1 }
            if let length, length != value { return -1 }
            length = value
        }
    }
    return length ?? -1
}
