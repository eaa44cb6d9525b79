// Fuzz target for the HTTP cache's freshness arithmetic (Sources/TransitCache/HTTP/StoredResponse.swift):
// `freshnessLifetime` (RFC 9111 §4.2.1, §4.2.2), `currentAge` (§4.2.3) and the `Age` a served
// response carries (`response(for:age:)`, §5.1), from response headers a server controls.
//
// The input: a status choice, configuration and time bytes, then five bytes for each of
// `Cache-Control`, `Expires`, `Date`, `Last-Modified` and `Age` (absent, a raw line of the input's
// tail, or a value generated from well-formed and hostile forms; sent once or twice), then the raw
// lines (LF-separated).
//
// Invariants:
// - every result is finite and ≥ 0, whatever the headers: the lifetime at most the span of
//   HTTP-dates (years 1–9999), `max-age` at most 2³¹ (RFC 9111 §1.2.2), the heuristic at most
//   the configured maximum; the `Age` written back is the current age, whole seconds, at most 2³¹;
// - `currentAge` never decreases as `now` grows, and grows by exactly the time elapsed (within
//   millisecond rounding) once `now` is past the response time;
// - the lifetime and the age equal an independent computation of RFC 9111 §4.2.1–§4.2.3 for a
//   private cache (as `CacheControl` and `freshnessLifetime` document: `s-maxage` ignored;
//   `max-age` over `Expires` − `Date` over the heuristic — 10 % (configured) of `Date` −
//   `Last-Modified`, capped, for a heuristically cacheable status or `public`; an invalid `Expires`
//   means already expired (§5.3); a `max-age` that does not parse means 0; a directive or an
//   `Expires` given twice is read as its first occurrence or as stale (§4.2.1); `Age` is the
//   largest delta-seconds element of its values, joined and split at commas, else 0), with dates
//   written and read by Foundation's `DateFormatter` (the three HTTP-date forms), where the
//   headers' meaning is unambiguous;
// - the case of header names and spaces and tabs around values change nothing;
// - the stored response's JSON round trip (the record's metadata) decodes to the same value, with
//   the same lifetime and age.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let url = URL(string: "https://api.example.com/feed")!

/// The statuses the input chooses from: every heuristically cacheable one and others.
private let statuses = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501, 201, 202, 206, 302, 303, 307, 400, 403, 500, 503, 599, 100, 0, -1, 1000]
/// RFC 9110 §15.1 (less 206), as `freshnessLifetime` documents.
private let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

/// Response times the input starts from (milliseconds since 1970): 1970, 1994, 2023, 2100, 1900,
/// 1621 and the last day of year 9999.
private let epochs: [Int64] = [0, 784_111_777_000, 1_700_000_000_123, 4_102_444_800_000, -2_208_988_800_000, -11_000_000_000_000, 253_402_200_000_000]
private let scales: [Int64] = [1, 1000, 60_000, 86_400_000]

/// The instants the harness writes as HTTP-dates: Gregorian (DateFormatter switches to the Julian
/// calendar before 1582) and four-digit years: 1600-01-01 to 9999-12-31 23:59:59.
private let earliestDate: Int64 = -11_676_096_000
private let latestDate: Int64 = 253_402_300_799
/// 2³¹, the largest delta-seconds value (RFC 9111 §1.2.2).
private let deltaSecondsCap: Int64 = 2_147_483_648

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let status = statuses[Int(input.byte()) % statuses.count]
    let flags = input.byte()
    let configuration = input.byte()
    let fraction = [0.1, 0.1, 0.1, 0.1, 0, 0.5, 1, 0.001][Int(configuration & 7)]
    let maximumHeuristic = [86_400.0, 86_400, 0, 60, 1e9, 3.5e11, 86_400, 1][Int(configuration >> 3 & 7)]

    // The times: the response head arrived at `responseTime`; the request went out `delay` before
    // (or after: a clock that stepped back); `now` is `resident` later (or earlier), `later` after.
    let epoch = epochs[Int(input.byte()) % epochs.count]
    let responseTime = epoch + Int64(input.uint16()) * 997
    let timeScales = input.byte()
    let delay = Int64(input.uint16()) * scales[Int(timeScales & 3)]
    let resident = Int64(input.uint16()) * scales[Int(timeScales >> 2 & 3)]
    let later = Int64(input.uint16()) * scales[Int(timeScales >> 4 & 3)]
    let requestTime = flags & 1 == 0 ? responseTime - delay : responseTime + delay % 10_000
    let now = flags & 2 == 0 ? responseTime + resident : responseTime - resident % 100_000
    let now2 = now + later

    let choices = (0..<5).map { _ in HeaderChoice(&input) }
    var raw = input.bytes.split(separator: 10, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }[...]

    // The headers, each with what it means where that is unambiguous. Date first: Expires is read
    // relative to it (an RFC 850 two-digit year), Date and Last-Modified relative to the response time.
    let responseSeconds = floorDiv(responseTime, 1000)
    let cacheControl = makeCacheControl(choices[0], &raw)
    let date = makeDate(choices[2], reference: responseSeconds, &raw)
    let dateReference: Int64? = switch date.meaning {
    case .absent, .invalid: responseSeconds
    case .valid(let seconds): seconds
    case .unknown, .duplicate: nil
    }
    let expires = makeDate(choices[1], reference: dateReference, &raw)
    let lastModified = makeDate(choices[3], reference: responseSeconds, &raw)
    let age = makeAge(choices[4], &raw)

    var fields: [HTTPField] = []
    for (name, header) in [("Cache-Control", cacheControl.header), ("Expires", expires), ("Date", date), ("Last-Modified", lastModified), ("Age", age)] {
        for (index, value) in header.values.enumerated() {
            fields.append(HTTPField(name: spelled(name, style: flags >> 4 & 3, index: index), value: value))
        }
    }
    if flags & 4 != 0 { fields.append(HTTPField(name: "ETag", value: "\"1\"")) }
    fields.append(HTTPField(name: "Content-Type", value: "application/json"))

    let head = HTTPResponseHead(url: url, statusCode: status, fields: fields)
    let stored = StoredResponse(url: url, response: head, request: URLRequest(url: url), requestTime: requestTime, responseTime: responseTime)
    let lifetime = stored.freshnessLifetime(fraction: fraction, maximumHeuristic: maximumHeuristic)
    let currentAge = stored.currentAge(now: now)
    let context = "(status \(status), fields \(fields.map { "\($0.name): \($0.value)" }), request \(requestTime), response \(responseTime), now \(now))"

    // Finite, ≥ 0, within the caps.
    require(lifetime.isFinite && lifetime >= 0, "the freshness lifetime is \(lifetime) \(context)")
    require(lifetime <= Double(latestDate + 62_135_596_800), "the freshness lifetime \(lifetime) s is longer than the span of HTTP-dates \(context)")
    require(currentAge.isFinite && currentAge >= 0, "the current age is \(currentAge) \(context)")
    require(currentAge >= Double(max(0, now - responseTime)) / 1000 - 1e-3, "the current age \(currentAge) is less than the time the response has been stored \(context)")

    // The age only grows, by the time elapsed once now is past the response time.
    let laterAge = stored.currentAge(now: now2)
    require(laterAge.isFinite && laterAge >= currentAge, "the age at \(now2) is \(laterAge), at \(now) \(currentAge) \(context)")
    let elapsed = Double(now2 - max(now, responseTime)) / 1000
    if now2 >= responseTime {
        let grown = laterAge - stored.currentAge(now: max(now, responseTime))
        require(close(grown, elapsed), "from \(max(now, responseTime)) to \(now2) the age grew by \(grown) s, not \(elapsed) s \(context)")
    }
    if now < responseTime {
        require(currentAge == stored.currentAge(now: responseTime), "before the response arrived the age is \(currentAge), not its initial age \(stored.currentAge(now: responseTime)) \(context)")
    }

    // The Age written back.
    if let served = stored.response(for: url, age: currentAge) {
        let written = served.values(forHTTPHeaderField: "Age")
        let expected = Int64(min(currentAge, Double(deltaSecondsCap)).rounded(.down))
        require(written == [String(expected)], "the served response's Age is \(written), not [\(expected)] (age \(currentAge)) \(context)")
        require(served.statusCode == status, "the served status is \(served.statusCode), not \(status)")
        for name in ["Cache-Control", "Expires", "Date", "Last-Modified"] {
            require(served.value(forHTTPHeaderField: name) == head.value(forHTTPHeaderField: name),
                    "the served \(name) is \(served.value(forHTTPHeaderField: name).debugDescription), not \(head.value(forHTTPHeaderField: name).debugDescription) \(context)")
        }
    } else {
        fail("no response to serve \(context)")
    }

    // An independent computation of RFC 9111 §4.2, where the headers' meaning is known.
    if let expected = expectedLifetime(status: status, cacheControl: cacheControl.meaning, expires: expires.meaning, date: date.meaning,
                                       lastModified: lastModified.meaning, responseTime: responseTime,
                                       fraction: fraction, maximumHeuristic: maximumHeuristic) {
        require(expected.contains { close(lifetime, $0) }, "the freshness lifetime is \(lifetime) s, not \(expected.map { "\($0)" }.joined(separator: " or ")) s \(context)")
    }
    if let expected = expectedAge(age: age.meaning, date: date.meaning, requestTime: requestTime, responseTime: responseTime, now: now) {
        require(close(currentAge, expected), "the current age is \(currentAge) s, not \(expected) s \(context)")
    }

    // The same headers with other name case and spaces and tabs around the values.
    var generator = FuzzGenerator(seed: bytes)
    let respelled = fields.map { field in
        HTTPField(name: randomCase(field.name, &generator), value: ows(&generator) + field.value + ows(&generator))
    }
    let other = StoredResponse(url: url, response: HTTPResponseHead(url: url, statusCode: status, fields: respelled),
                               request: URLRequest(url: url), requestTime: requestTime, responseTime: responseTime)
    let otherLifetime = other.freshnessLifetime(fraction: fraction, maximumHeuristic: maximumHeuristic)
    let otherAge = other.currentAge(now: now)
    require(otherLifetime == lifetime, "with \(respelled.map { "\($0.name): \($0.value)" }) the lifetime is \(otherLifetime), not \(lifetime) \(context)")
    require(otherAge == currentAge, "with \(respelled.map { "\($0.name): \($0.value)" }) the age is \(otherAge), not \(currentAge) \(context)")

    // Through the record's metadata.
    let decoded: StoredResponse
    do {
        decoded = try JSONDecoder().decode(StoredResponse.self, from: JSONEncoder().encode(stored))
    } catch {
        fail("the stored response does not round-trip through JSON: \(error)")
    }
    require(decoded == stored, "the stored response reads back from JSON as \(decoded), not \(stored)")
    require(decoded.freshnessLifetime(fraction: fraction, maximumHeuristic: maximumHeuristic) == lifetime && decoded.currentAge(now: now) == currentAge,
            "read back from JSON, the lifetime and age are \(decoded.freshnessLifetime(fraction: fraction, maximumHeuristic: maximumHeuristic)) and \(decoded.currentAge(now: now)), not \(lifetime) and \(currentAge)")
}

// MARK: - The oracle

/// What a header means, as far as the harness knows.
private enum Meaning: Equatable {
    case absent
    /// A date (seconds since 1970) or a number.
    case valid(Int64)
    /// A value the RFC calls invalid (an `Expires` of `0`, a date that does not exist).
    case invalid
    /// A raw value the harness does not interpret.
    case unknown
    /// Sent twice: the first value's meaning.
    indirect case duplicate(Meaning)
}

/// What a generated `Cache-Control` value says: every `max-age` in order, and `public`.
private struct Directives {
    var maxAges: [Int64] = []
    var isPublic = false
}

/// RFC 9111 §4.2.1 and §4.2.2 for a private cache: the lifetimes the library may answer, or nil
/// when a header's meaning is unknown.
private func expectedLifetime(status: Int, cacheControl: Directives?, expires: Meaning, date: Meaning, lastModified: Meaning,
                              responseTime: Int64, fraction: Double, maximumHeuristic: Double) -> [Double]? {
    guard let cacheControl else { return nil }
    if let first = cacheControl.maxAges.first {
        // Two different max-age directives: the first, or stale (§4.2.1).
        return cacheControl.maxAges.allSatisfy({ $0 == first }) ? [Double(first)] : [Double(first), 0]
    }
    let dateValue: Double
    switch date {
    case .absent, .invalid: dateValue = Double(responseTime) / 1000
    case .valid(let seconds): dateValue = Double(seconds)
    case .unknown, .duplicate: return nil
    }
    switch expires {
    case .valid(let seconds): return [max(0, Double(seconds) - dateValue)]
    case .invalid: return [0]
    case .duplicate(.valid(let seconds)): return [max(0, Double(seconds) - dateValue), 0]
    case .duplicate(.invalid): return [0]
    case .unknown, .duplicate: return nil
    case .absent: break
    }
    guard heuristicallyCacheable.contains(status) || cacheControl.isPublic else { return [0] }
    switch lastModified {
    case .valid(let seconds): return [min(max(0, dateValue - Double(seconds)) * fraction, maximumHeuristic)]
    case .absent, .invalid: return [0]
    case .unknown, .duplicate: return nil
    }
}

/// RFC 9111 §4.2.3, in whole milliseconds; nil when `Age` or `Date` means something unknown.
private func expectedAge(age: Meaning, date: Meaning, requestTime: Int64, responseTime: Int64, now: Int64) -> Double? {
    let ageValue: Int64
    switch age {
    case .valid(let seconds): ageValue = seconds
    case .absent, .invalid: ageValue = 0
    case .unknown, .duplicate: return nil
    }
    let dateValue: Int64
    switch date {
    case .valid(let seconds): dateValue = seconds * 1000
    case .absent, .invalid: dateValue = responseTime
    case .unknown, .duplicate: return nil
    }
    let apparentAge = max(0, responseTime - dateValue)
    let responseDelay = max(0, responseTime - requestTime)
    let correctedInitialAge = max(apparentAge, ageValue * 1000 + responseDelay)
    let residentTime = max(0, now - responseTime)
    return Double(correctedInitialAge + residentTime) / 1000
}

private func close(_ a: Double, _ b: Double) -> Bool {
    abs(a - b) <= 1e-3 + 1e-12 * max(abs(a), abs(b))
}

private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    a >= 0 ? a / b : -((-a + b - 1) / b)
}

// MARK: - Generating the headers

/// The five bytes that choose one header: how (absent, raw, generated), sent twice or not, and
/// the generator's parameters.
private struct HeaderChoice {
    let mode: UInt8
    let kind: UInt8
    let number: Int
    let form: UInt8

    init(_ input: inout FuzzInput) {
        mode = input.byte()
        kind = input.byte()
        number = input.uint16()
        form = input.byte()
    }

    var isAbsent: Bool { mode & 7 < 2 }
    var isRaw: Bool { mode & 7 == 2 }
    var isTwice: Bool { mode & 8 != 0 }
    /// The choice for the second value.
    var second: HeaderChoice { HeaderChoice(mode: mode, kind: kind &+ form | 1, number: (number &* 7 &+ 13) & 0xFFFF, form: form >> 2) }

    private init(mode: UInt8, kind: UInt8, number: Int, form: UInt8) {
        self.mode = mode
        self.kind = kind
        self.number = number
        self.form = form
    }
}

private struct Header {
    var values: [String] = []
    var meaning: Meaning = .absent
}

private func nextRaw(_ raw: inout ArraySlice<String>) -> String {
    raw.popFirst() ?? ""
}

// Dates.

private func makeDate(_ choice: HeaderChoice, reference: Int64?, _ raw: inout ArraySlice<String>) -> Header {
    if choice.isAbsent { return Header() }
    let first = oneDate(choice, reference: reference, &raw)
    guard choice.isTwice else { return Header(values: [first.text], meaning: first.meaning) }
    let second = oneDate(choice.second, reference: reference, &raw)
    return Header(values: [first.text, second.text], meaning: .duplicate(first.meaning))
}

private let invalidDates = [
    "0", "-1", "", "yesterday", "Mon, 06 Nov 1994 08:49:37 GMT", "Thu, 30 Feb 2023 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
    "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "1994-11-06T08:49:37Z", "Sun, 06 Nov 1994 08:49:37 +0000",
    "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 10000 08:49:37 GMT",
    "Sat, 01 Jan 0000 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT", "1700000000", "Sun Nov  6 08:49:37 94",
    "Sun, 06 Nov -994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:-7 GMT", "Sun, 06 Nov 1994 08:49:37 GMT GMT",
]

private func oneDate(_ choice: HeaderChoice, reference: Int64?, _ raw: inout ArraySlice<String>) -> (text: String, meaning: Meaning) {
    if choice.isRaw {
        let text = nextRaw(&raw)
        return (text, HTTPDates.read(text).map { .valid($0) } ?? .unknown)
    }
    let base = reference ?? 1_700_000_000
    let signed = Int64(Int16(truncatingIfNeeded: choice.number))
    let seconds: Int64
    switch choice.kind % 8 {
    case 0: seconds = base + signed
    case 1: seconds = base + signed * 3600
    case 2: seconds = base + signed * 86_400 * 7
    case 3: seconds = [earliestDate, latestDate, 0, -2_208_988_800, 2_147_483_648, -1, 951_782_400][choice.number % 7]
    case 4: return (invalidDates[choice.number % invalidDates.count], .invalid)
    case 5:
        // A real date with the wrong weekday: invalid.
        let right = HTTPDates.imf(min(max(base + signed, earliestDate), latestDate))
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        let index = days.firstIndex(of: String(right.prefix(3)))!
        return (days[(index + 1 + choice.number % 6) % 7] + right.dropFirst(3), .invalid)
    default: seconds = base - Int64(choice.number)
    }
    let instant = min(max(seconds, earliestDate), latestDate)
    switch choice.form % 3 {
    case 1 where reference != nil && HTTPDates.rfc850Reads(instant, reference: reference!):
        return (HTTPDates.rfc850(instant), .valid(instant))
    case 2: return (HTTPDates.asctime(instant), .valid(instant))
    default: return (HTTPDates.imf(instant), .valid(instant))
    }
}

/// The three HTTP-date forms (RFC 9110 §5.6.7), written and read by Foundation's `DateFormatter`.
private enum HTTPDates {
    static let imfFormatter = formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'")
    static let rfc850Formatter = formatter("EEEE, dd-MMM-yy HH:mm:ss 'GMT'")
    static let asctimeFormatter = formatter("EEE MMM dd HH:mm:ss yyyy")
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar
    }()

    static func formatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = calendar
        formatter.dateFormat = format
        formatter.isLenient = false
        return formatter
    }

    static func imf(_ seconds: Int64) -> String { imfFormatter.string(from: Date(timeIntervalSince1970: Double(seconds))) }
    static func rfc850(_ seconds: Int64) -> String { rfc850Formatter.string(from: Date(timeIntervalSince1970: Double(seconds))) }
    /// `Sun Nov  6 08:49:37 1994`: the day padded with a space.
    static func asctime(_ seconds: Int64) -> String {
        var text = Array(asctimeFormatter.string(from: Date(timeIntervalSince1970: Double(seconds))))
        if text[8] == "0" { text[8] = " " }
        return String(text)
    }

    static func year(_ seconds: Int64) -> Int {
        calendar.component(.year, from: Date(timeIntervalSince1970: Double(seconds)))
    }

    /// RFC 9110 §5.6.7: a two-digit year more than 50 years in the future (from `reference`) is
    /// in the past century. Does the RFC 850 form of `seconds` read back as its own year?
    static func rfc850Reads(_ seconds: Int64, reference: Int64) -> Bool {
        let year = HTTPDates.year(seconds), current = HTTPDates.year(reference)
        guard current >= 1, current <= 9999 else { return false }
        var read = current - current % 100 + year % 100
        if read > current + 50 { read -= 100 }
        return read == year
    }

    /// An IMF-fixdate or asctime date exactly as the harness writes it (four-digit years within
    /// the Gregorian range), or nil. ASCII only: HTTP-dates are, and swift-corelibs-foundation's
    /// `DateFormatter.date(from:)` traps on some other text ("Incorrect range CFRange", a
    /// combining mark after a space).
    static func read(_ text: String) -> Int64? {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        if let date = imfFormatter.date(from: text), date.timeIntervalSince1970.rounded() == date.timeIntervalSince1970 {
            let seconds = Int64(date.timeIntervalSince1970)
            if (earliestDate...latestDate).contains(seconds), imf(seconds) == text { return seconds }
        }
        var padded = Array(text)
        if padded.count == 24, padded[8] == " " {
            padded[8] = "0"
            if let date = asctimeFormatter.date(from: String(padded)), date.timeIntervalSince1970.rounded() == date.timeIntervalSince1970 {
                let seconds = Int64(date.timeIntervalSince1970)
                if (earliestDate...latestDate).contains(seconds), asctime(seconds) == text { return seconds }
            }
        }
        return nil
    }
}

// Age.

private func makeAge(_ choice: HeaderChoice, _ raw: inout ArraySlice<String>) -> Header {
    if choice.isAbsent { return Header() }
    let first = oneAge(choice, &raw)
    guard choice.isTwice else { return Header(values: [first.text], meaning: ageMeaning([first.text])) }
    let second = oneAge(choice.second, &raw)
    return Header(values: [first.text, second.text], meaning: ageMeaning([first.text, second.text]))
}

/// What the `Age` fields say, as the library documents it: the values joined (`, `) and split at
/// every comma byte, the largest element that is delta-seconds; none (`invalid`) counts as 0.
/// Never younger than any value sent says.
private func ageMeaning(_ texts: [String]) -> Meaning {
    let elements = Array(texts.joined(separator: ", ").utf8).split(separator: 0x2C, omittingEmptySubsequences: false)
    let values = elements.compactMap { element -> Int64? in
        if case .valid(let seconds) = deltaSeconds(String(decoding: element, as: UTF8.self)) { return seconds }
        return nil
    }
    return values.max().map(Meaning.valid) ?? .invalid
}

private let invalidNumbers = ["-5", "1.5", "+5", "", "0x10", "5 5", "five", "5s", "\u{FF15}", "1e3", "-0", "5,", ",5", "\"5\"", "٥", "5\u{301}"]
private let largeNumbers = ["2147483647", "2147483648", "2147483649", "9223372036854775807", "9223372036854775808",
                            "99999999999999999999999999999999999999", "0", "00000000000000000000000000000000005", "4294967296"]

private func oneAge(_ choice: HeaderChoice, _ raw: inout ArraySlice<String>) -> (text: String, meaning: Meaning) {
    if choice.isRaw {
        let text = nextRaw(&raw)
        return (text, deltaSeconds(text))
    }
    let text: String
    switch choice.kind % 8 {
    case 0, 1, 2: text = String(choice.number)
    case 3: text = largeNumbers[choice.number % largeNumbers.count]
    case 4: text = invalidNumbers[choice.number % invalidNumbers.count]
    case 5: text = " \(choice.number)\t"
    case 6: text = String(choice.number * 1000)
    default: text = String(choice.number * 100_000)
    }
    return (text, deltaSeconds(text))
}

/// delta-seconds (RFC 9111 §1.2.2) on the value's bytes, spaces and tabs around it removed: ASCII
/// digits only, at most 2³¹; anything else is invalid.
private func deltaSeconds(_ text: String) -> Meaning {
    var bytes = Array(text.utf8)[...]
    while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
    while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
    guard !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return .invalid }
    let significant = bytes.drop { $0 == 0x30 }
    guard significant.count <= 10 else { return .valid(deltaSecondsCap) }
    return .valid(min(significant.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }, deltaSecondsCap))
}

// Cache-Control.

private struct CacheControlHeader {
    var header = Header()
    /// nil for a raw value.
    var meaning: Directives? = Directives()
}

private func makeCacheControl(_ choice: HeaderChoice, _ raw: inout ArraySlice<String>) -> CacheControlHeader {
    if choice.isAbsent { return CacheControlHeader() }
    if choice.isRaw {
        let texts = choice.isTwice ? [nextRaw(&raw), nextRaw(&raw)] : [nextRaw(&raw)]
        return CacheControlHeader(header: Header(values: texts, meaning: .unknown), meaning: readDirectives(texts.joined(separator: ", ")))
    }
    var generator = FuzzGenerator(seed: [choice.kind, UInt8(choice.number >> 8), UInt8(choice.number & 0xFF), choice.form])
    var directives = Directives()
    var values: [String] = []
    for _ in 0..<(choice.isTwice ? 2 : 1) {
        var parts: [String] = []
        for _ in 0...(generator.next() % 4) {
            let (text, maxAge, isPublic) = directive(&generator)
            parts.append(text)
            if let maxAge { directives.maxAges.append(maxAge) }
            if isPublic { directives.isPublic = true }
        }
        values.append(parts.joined(separator: [",", ", ", " ,\t"][Int(generator.next() % 3)]))
    }
    return CacheControlHeader(header: Header(values: values, meaning: .unknown), meaning: directives)
}

/// The directives of a raw value written in RFC 9111's grammar with token arguments only
/// (`#( token [ "=" token ] )`, OWS around commas): nil for anything else.
private func readDirectives(_ text: String) -> Directives? {
    let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    let isToken = { (bytes: ArraySlice<UInt8>) in !bytes.isEmpty && bytes.allSatisfy { tchar.contains($0) } }
    var directives = Directives()
    for element in Array(text.utf8).split(separator: 0x2C, omittingEmptySubsequences: false) {
        var element = element
        while let first = element.first, first == 0x20 || first == 0x09 { element.removeFirst() }
        while let last = element.last, last == 0x20 || last == 0x09 { element.removeLast() }
        if element.isEmpty { continue }
        let parts = element.split(separator: 0x3D, maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.allSatisfy(isToken) else { return nil }
        let name = String(decoding: parts[0], as: UTF8.self).lowercased()
        if name == "max-age" {
            guard parts.count == 2, case .valid(let value) = deltaSeconds(String(decoding: parts[1], as: UTF8.self)) else {
                directives.maxAges.append(0)
                continue
            }
            directives.maxAges.append(value)
        }
        if name == "public" { directives.isPublic = true }
    }
    return directives
}

/// One directive: its text, the max-age it states (a value that does not parse is 0), and whether
/// it is `public`.
private func directive(_ generator: inout FuzzGenerator) -> (String, Int64?, Bool) {
    func number() -> (String, Int64) {
        let choice = generator.next() % 12
        switch choice {
        case 0..<5: let value = Int64(generator.next() % 100_000); return (String(value), value)
        case 5: let value = Int64(generator.next() % 100_000); return ("\"\(value)\"", value)
        case 6: let text = largeNumbers[Int(generator.next()) % largeNumbers.count]
            guard case .valid(let value) = deltaSeconds(text) else { return (text, 0) }
            return (text, value)
        case 7: return (invalidNumbers[Int(generator.next()) % invalidNumbers.count].replacingOccurrences(of: ",", with: ""), 0)
        default: let value = Int64(generator.next() % 10); return (String(value), value)
        }
    }
    func name(_ text: String) -> String { generator.next() % 4 == 0 ? text.uppercased() : text }
    switch generator.next() % 12 {
    case 0, 1, 2:
        // A quoted-string argument is read without its quotes (RFC 9111 §5.2).
        let text = number().0
        let unquoted = text.count >= 2 && text.hasPrefix("\"") && text.hasSuffix("\"") ? String(text.dropFirst().dropLast()) : text
        guard case .valid(let value) = deltaSeconds(unquoted) else { return ("\(name("max-age"))=\(text)", 0, false) }
        return ("\(name("max-age"))=\(text)", value, false)
    case 3: return ("\(name("max-age"))", 0, false)
    case 4, 5: return ("\(name("s-maxage"))=\(number().0)", nil, false)
    case 6: return (name("public"), nil, true)
    case 7: return (name("private"), nil, false)
    case 8: return (["no-cache", "must-revalidate", "no-store", "immutable", "proxy-revalidate", "no-transform"][Int(generator.next() % 6)], nil, false)
    case 9: return ("stale-while-revalidate=\(number().0)", nil, false)
    case 10: return ("ext=\"a, max-age=99, public\"", nil, false)
    default: return ("stale-if-error=\(number().0)", nil, false)
    }
}

// MARK: - Spelling

/// A header name in lower case, upper case, or (style 3) as written for the first field and
/// lowercased for the second.
private func spelled(_ name: String, style: UInt8, index: Int) -> String {
    switch style {
    case 1: return name.lowercased()
    case 2: return name.uppercased()
    case 3: return index == 1 ? name.lowercased() : name
    default: return name
    }
}

private func randomCase(_ text: String, _ generator: inout FuzzGenerator) -> String {
    String(decoding: text.utf8.map { byte in
        guard generator.next() & 1 == 1 else { return byte }
        if (0x41...0x5A).contains(byte) { return byte | 0x20 }
        if (0x61...0x7A).contains(byte) { return byte & ~0x20 }
        return byte
    }, as: UTF8.self)
}

private func ows(_ generator: inout FuzzGenerator) -> String {
    ["", " ", "\t", "  ", " \t "][Int(generator.next() % 5)]
}
