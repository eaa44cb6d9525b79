// Fuzz target for `RetryAfter` (Sources/Transit/Responses/RetryAfter.swift). The input is the
// header value, as UTF-8 (invalid bytes become U+FFFD).
//
// Invariants:
// - the result is nil or a finite number >= 0;
// - surrounding OWS (spaces, tabs) changes nothing, and neither does the case of ASCII text;
// - an all-digit value is never nil: with at most 15 significant digits it is exactly `Int(text)`,
//   a longer one is at least 9e9 ("longer than any cap") and finite; `-digits` means now (0);
//   `digits.digits` is `Double(text)`;
// - a value read as an HTTP-date gives `date - now` (clamped at 0), and the same instant written
//   back in each of the three forms (from Foundation's Gregorian calendar, an independent
//   implementation of the calendar arithmetic) reads back as the same instant.
import Foundation

/// Wed, 01 Jan 2025 00:00:00 GMT: a fixed "now", so runs are reproducible.
private let now = Date(timeIntervalSince1970: 1_735_689_600)

private let gmtCalendar: Calendar = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "GMT")!
    return calendar
}()

/// Foundation's Gregorian calendar switches to the Julian one before 15 October 1582; HTTP dates
/// are proleptic Gregorian, so the calendar is an oracle only from 1583 on.
private let firstComparableDate = Date(timeIntervalSince1970: -12_212_553_600) // 1583-01-01

func fuzzTarget(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let result = RetryAfter.seconds(from: text, now: now)

    if let result {
        require(result.isFinite && result >= 0, "result \(result) is not a finite number >= 0")
    }

    // One whitespace variant and one case variant per input (chosen by its length, so a run is
    // reproducible): each extra parse costs as much as the first.
    let pads = [(" ", ""), ("", "\t"), (" \t ", "\t \t"), ("\t", " ")]
    let (before, after) = pads[bytes.count % pads.count]
    let padded = RetryAfter.seconds(from: before + text + after, now: now)
    require(padded == result, "surrounding whitespace \((before + "…" + after).debugDescription) changed \(String(describing: result)) to \(String(describing: padded))")

    if text.utf8.allSatisfy({ $0 < 0x80 }) {
        let variant = bytes.count % 2 == 0 ? text.uppercased() : text.lowercased()
        let other = RetryAfter.seconds(from: variant, now: now)
        require(other == result, "the case of the text changed \(String(describing: result)) to \(String(describing: other)) (\(variant.debugDescription))")
    }

    checkNumbers(text, result)
    checkDates(text, result)
}

private func isDigits(_ text: Substring) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
}

private func checkNumbers(_ text: String, _ result: Double?) {
    let body = Substring(text)
    if isDigits(body) {
        let significant = body.drop { $0 == "0" }
        if significant.count <= 15 {
            let expected = Double(Int(body) ?? -1)
            require(result == expected, "all-digit value read as \(String(describing: result)), expected Int(text) = \(expected)")
        } else {
            guard let result else { fail("an all-digit value of \(significant.count) significant digits was read as absent (nil)") }
            require(result >= 9e9 && result.isFinite, "an all-digit value of \(significant.count) significant digits was read as \(result), expected a finite value >= 9e9")
        }
    } else if body.first == "-", isDigits(body.dropFirst()), body.dropFirst().drop(while: { $0 == "0" }).count <= 15 {
        require(result == 0, "a negative delay was read as \(String(describing: result)), expected 0 (now)")
    } else {
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 2, isDigits(parts[0]), isDigits(parts[1]), body.count <= 16 {
            require(result == Double(text), "a fractional delay was read as \(String(describing: result)), expected \(String(describing: Double(text)))")
        }
    }
}

private func checkDates(_ text: String, _ result: Double?) {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    guard RetryAfter.delaySeconds(trimmed) == nil, let date = RetryAfter.httpDate(trimmed, now: now) else { return }
    let expected = max(0, date.timeIntervalSince(now))
    require(result == expected, "read as the date \(date.timeIntervalSince1970) (seconds since 1970) but returned \(String(describing: result)), expected \(expected)")
    guard date >= firstComparableDate else { return }

    let parts = gmtCalendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
    guard let year = parts.year, let month = parts.month, let day = parts.day, let hour = parts.hour,
          let minute = parts.minute, let second = parts.second, let weekday = parts.weekday
    else { fail("Foundation's calendar has no components for \(date.timeIntervalSince1970)") }
    // The leap second 9999-12-31 23:59:60 is 10000-01-01, which no four-digit form can write.
    guard year <= 9999 else { return }
    let shortDays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    func four(_ value: Int) -> String { String(repeating: "0", count: max(0, 4 - String(value).count)) + String(value) }
    let time = "\(two(hour)):\(two(minute)):\(two(second))"
    var forms = [
        "\(shortDays[weekday - 1]), \(two(day)) \(months[month - 1]) \(four(year)) \(time) GMT",
        "\(shortDays[weekday - 1]) \(months[month - 1]) \(day < 10 ? " \(day)" : "\(day)") \(time) \(four(year))",
    ]
    // RFC 850's two-digit year names the year within 50 years ahead of now, or the century before.
    let currentYear = gmtCalendar.component(.year, from: now)
    if year > currentYear + 50 - 100, year <= currentYear + 50 {
        forms.append("\(longDays[weekday - 1]), \(two(day))-\(months[month - 1])-\(two(year % 100)) \(time) GMT")
    }
    for form in forms {
        let reread = RetryAfter.httpDate(form, now: now)
        require(reread == date, "the date \(date.timeIntervalSince1970) (seconds since 1970) written as \(form.debugDescription) reads back as \(String(describing: reread))")
    }
}
