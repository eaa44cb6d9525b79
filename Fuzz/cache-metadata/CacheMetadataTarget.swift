// Fuzz target for the HTTP cache's metadata as it is read back from a record file
// (Sources/TransitCache/HTTP/StoredResponse.swift): `CachingTransport` decodes a record's
// metadata with `JSONDecoder` into a `StoredResponse` and computes with it. The record's
// checksums only say the file is what was written, not that this program wrote it: another
// program, or a person, can write any metadata with valid checksums. The `cache-record` target
// covers the record around it; `cache-freshness` the arithmetic on responses this cache made.
//
// The input: a mode byte. Even: the rest is the metadata, as is. Odd: the metadata is a JSON
// object the harness writes from the input (so that it decodes, and what it holds is hostile
// rather than malformed): the status and the two times as any 64-bit numbers (or edge values),
// the header names and values, `Vary` names and values (as many or not) from input lines.
//
// Invariants, for every metadata that decodes:
// - nothing traps (the defect this target was written for: `currentAge` subtracted the stored
//   times as `Int64`, so a request time of `Int64.min` crashed the next request for the URL);
// - `currentAge(now:)` is finite and ≥ 0 for every `now` (the extremes, the stored times, a
//   fuzzer-chosen one) and never decreases as `now` grows;
// - `freshnessLifetime` is finite and ≥ 0, at most `maximumHeuristic` unless the response states
//   its lifetime (`max-age`, `Expires`);
// - `response(for:age:)` keeps the status and every header but `Age`, and adds one `Age`: the age
//   in whole seconds, within 0...2³¹;
// - `matches` is false when the names hold `*`, and otherwise true for a request without headers
//   exactly when every stored `Vary` value is absent and there are as many as names;
// - encoded again and decoded, the same value;
// - `updated(with:)` (a 304 merged in, at a fuzzer-chosen time) keeps the status, takes the new
//   times, and has a finite age.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let url = URL(string: "https://api.example.com/feed")!
private let edges: [Int64] = [.min, .min + 1, -1, 0, 1, 1_800_000_000_000, 253_402_300_799_999, .max - 1, .max]
private let statuses: [Int64] = [200, 304, 404, 0, -1, 99, 600, 999, .max, .min]

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let mode = input.byte()
    let metadata = mode % 2 == 0 ? Data(input.bytes) : generatedMetadata(&input)
    guard let stored = try? JSONDecoder().decode(StoredResponse.self, from: metadata) else { return }
    let context = "(status \(stored.status), request \(stored.requestTime), response \(stored.responseTime), headers \(stored.headers), vary \(stored.varyNames) \(stored.varyValues))"

    // The age: finite, not negative, never decreasing with now.
    var generator = FuzzGenerator(seed: bytes)
    let fuzzedNow = Int64(bitPattern: generator.next() << 33 ^ generator.next())
    let nows = (edges + [stored.requestTime, stored.responseTime, fuzzedNow]).sorted()
    var previous = 0.0
    for now in nows {
        let age = stored.currentAge(now: now)
        require(age.isFinite && age >= 0, "the age at \(now) is \(age) \(context)")
        require(age >= previous, "the age at \(now) is \(age), less than \(previous) earlier \(context)")
        previous = age
    }

    // The lifetime.
    let control = stored.cacheControl
    let statesLifetime = control.maxAge != nil || stored.header("Expires") != nil
    for (fraction, maximum) in [(0.1, 86_400.0), (1, 1e12), (0, 0)] {
        let lifetime = stored.freshnessLifetime(fraction: fraction, maximumHeuristic: maximum)
        require(lifetime.isFinite && lifetime >= 0, "the lifetime is \(lifetime) \(context)")
        require(statesLifetime || lifetime <= maximum, "the heuristic lifetime \(lifetime) is over \(maximum) \(context)")
    }

    // The response handed out.
    let age = stored.currentAge(now: fuzzedNow)
    if let head = stored.response(for: url, age: age) {
        require(head.statusCode == stored.status, "the response's status is \(head.statusCode) \(context)")
        let ages = head.fields.filter { $0.name.lowercased() == "age" }
        let expected = String(Int(min(age, 2_147_483_648).rounded(.down)))
        require(ages.count == 1 && ages[0].value == expected, "the response's Age fields are \(ages), expected \(expected) for \(age) \(context)")
        let others = head.fields.filter { $0.name.lowercased() != "age" }
        let kept = stored.headers.filter { $0.key.lowercased() != "age" }
        require(others.count == kept.count && others.allSatisfy { kept[$0.name] == $0.value },
                "the response's headers are \(head.fields), stored \(stored.headers) \(context)")
    }

    // Vary.
    let request = URLRequest(url: url)
    let matches = stored.matches(request)
    if stored.varyNames.contains("*") {
        require(!matches, "a response that varies on * matches \(context)")
    } else if stored.varyNames.allSatisfy({ request.value(forHTTPHeaderField: $0) == nil }) {
        let expected = stored.varyValues.count == stored.varyNames.count && stored.varyValues.allSatisfy { $0 == nil }
        require(matches == expected, "matches a request without headers: \(matches) \(context)")
    }

    // The JSON round trip.
    if let encoded = try? JSONEncoder().encode(stored) {
        let decoded = try? JSONDecoder().decode(StoredResponse.self, from: encoded)
        require(decoded == stored, "encoded and decoded again: \(String(describing: decoded)) \(context)")
    } else {
        fail("a decoded response does not encode \(context)")
    }

    // A 304 merged in.
    let revalidatedAt = edges[Int(generator.next() % UInt64(edges.count))]
    let notModified = HTTPResponseHead(url: url, statusCode: 304, fields: generator.next() % 2 == 0 ? [] : [
        HTTPField(name: "Cache-Control", value: "max-age=60"), HTTPField(name: "Age", value: "7"), HTTPField(name: "Vary", value: "Accept"),
    ])
    let updated = stored.updated(with: notModified, request: request, requestTime: fuzzedNow, responseTime: revalidatedAt)
    require(updated.status == stored.status && updated.requestTime == fuzzedNow && updated.responseTime == revalidatedAt,
            "updated: status \(updated.status), times \(updated.requestTime) \(updated.responseTime) \(context)")
    let updatedAge = updated.currentAge(now: revalidatedAt)
    require(updatedAge.isFinite && updatedAge >= 0, "the age after a 304 at \(revalidatedAt) is \(updatedAge) \(context)")
}

/// A metadata object written from the input: every field present and of its type, the values
/// the input's.
private func generatedMetadata(_ input: inout FuzzInput) -> Data {
    let choices = input.byte()
    func number(_ choice: UInt8, _ list: [Int64]) -> Int64 {
        if choice & 1 == 0 { return list[Int(choice >> 1) % list.count] }
        return (0..<8).reduce(Int64(0)) { value, _ in value << 8 | Int64(input.byte()) }
    }
    let status = number(choices & 0x3, statuses)
    let requestTime = number(choices >> 2 & 0x7, edges)
    let responseTime = number(choices >> 5, edges)
    let lines = input.bytes.split(separator: 10, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    var headers: [String: String] = [:]
    var varyNames: [String] = []
    var varyValues: [String?] = []
    for line in lines {
        // `name:value` is a header, `=name` a Vary name, `?value` a Vary value, `?` an absent one.
        if line.hasPrefix("=") {
            varyNames.append(String(line.dropFirst()))
        } else if line.hasPrefix("?") {
            varyValues.append(line == "?" ? nil : String(line.dropFirst()))
        } else if let colon = line.firstIndex(of: ":") {
            headers[String(line[..<colon])] = String(line[line.index(after: colon)...])
        }
    }
    let object: [String: Any] = [
        "url": url.absoluteString, "status": NSNumber(value: status), "headers": headers,
        "varyNames": varyNames, "varyValues": varyValues.map { $0.map { $0 as Any } ?? NSNull() },
        "requestTime": NSNumber(value: requestTime), "responseTime": NSNumber(value: responseTime),
    ]
    return (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
}
