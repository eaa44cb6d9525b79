import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Parses the `Retry-After` header (RFC 9110 §10.2.3).
///
/// Both forms are read: delay-seconds (fractional values such as `1.5`, which some servers send,
/// are accepted) and HTTP-date in each of its three forms — IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`)
/// and asctime (`Sun Nov  6 08:49:37 1994`). A negative delay or a date in the past means "now"
/// (zero). A delay with more digits than a `Double` holds (hundreds of them) means "longer than
/// any cap": it is read as 2⁶³ − 1 seconds, so callers that cap the wait fail
/// fast instead of retrying early. Anything else — an empty value, garbage, an impossible date, a weekday that does not
/// match the date, a zone other than GMT — means the header is absent (`nil`), never a crash.
public enum RetryAfter {
    /// What a delay too large to represent is read as: longer than any caller will wait
    /// (2⁶³ − 1 seconds). It compares, and a caller that caps the wait fails fast instead of
    /// retrying early.
    package static let longest: Duration = .seconds(Int64.max)

    /// How long to wait that `value` asks for, measured from `now`, or `nil` if the value is
    /// missing or cannot be read. Never negative; at most 2⁶³ − 1 seconds.
    public static func delay(from value: String?, now: Date = Date()) -> Duration? {
        seconds(from: value, now: now).map(duration(seconds:))
    }

    /// How long to wait that `value` asks for, an HTTP-date measured from `serverDate` — the
    /// response's own `Date` header — when that is a readable HTTP-date, so a client whose clock
    /// is off by minutes waits what the server meant; from `now` otherwise. A delay in seconds is
    /// the same either way. `nil` if `value` is missing or cannot be read.
    public static func delay(from value: String?, serverDate: String?, now: Date = Date()) -> Duration? {
        seconds(from: value, serverDate: serverDate, now: now).map(duration(seconds:))
    }

    /// ``seconds(from:now:)`` with an HTTP-date measured from `serverDate` (a `Date` header) when
    /// it is readable.
    static func seconds(from value: String?, serverDate: String?, now: Date = Date()) -> TimeInterval? {
        let reference = serverDate.flatMap { httpDate($0.trimmingCharacters(in: .whitespaces), now: now) } ?? now
        return seconds(from: value, now: reference)
    }

    /// `seconds` as a `Duration`: NaN and negative values are zero, values too large for a
    /// `Duration` of whole seconds are ``longest``.
    static func duration(seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }
        guard seconds < 9e18 else { return longest }
        return .seconds(seconds)
    }

    /// The number of seconds to wait that `value` asks for, measured from `now`, or `nil` if the
    /// value is missing or cannot be read.
    static func seconds(from value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        if let delay = delaySeconds(trimmed) { return max(0, delay) }
        guard let date = httpDate(trimmed, now: now) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Reads `[-]digits[.digits]`; nothing else (no exponent, no `inf`, no hex).
    static func delaySeconds(_ text: String) -> TimeInterval? {
        var scalars = Substring(text).unicodeScalars[...]
        var negative = false
        if scalars.first == "-" || scalars.first == "+" {
            negative = scalars.first == "-"
            scalars = scalars.dropFirst()
        }
        let isDigit: (Unicode.Scalar) -> Bool = { $0.value >= 48 && $0.value <= 57 }
        let parts = scalars.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.allSatisfy(isDigit) else {
            return nil
        }
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(isDigit) else { return nil }
        }
        guard var magnitude = Double(String(String.UnicodeScalarView(scalars))), !magnitude.isNaN else {
            return nil
        }
        // Digits too many for a Double: the server asks for longer than any caller will wait.
        // The largest finite value says so and still compares, adds and prints safely.
        if magnitude.isInfinite { magnitude = .greatestFiniteMagnitude }
        return negative ? -magnitude : magnitude
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// Reads an HTTP-date in any of its three forms, in UTC.
    package static func httpDate(_ text: String, now: Date) -> Date? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.lowercased() }
        switch tokens.count {
        case 6 where tokens[0].hasSuffix(","):
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard let weekday = shortDays.firstIndex(of: String(tokens[0].dropLast())), tokens[5] == "gmt",
                  tokens[1].count == 2, tokens[3].count == 4,
                  let day = number(tokens[1]), let month = month(tokens[2]), let year = number(tokens[3])
            else { return nil }
            return date(year: year, month: month, day: day, time: tokens[4], weekday: weekday)
        case 4 where tokens[0].hasSuffix(","):
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false)
            guard let weekday = longDays.firstIndex(of: String(tokens[0].dropLast())), tokens[3] == "gmt", parts.count == 3,
                  parts[0].count == 2, parts[2].count == 2,
                  let day = number(parts[0]), let month = month(String(parts[1])), let shortYear = number(parts[2]),
                  let year = fullYear(shortYear, now: now)
            else { return nil }
            return date(year: year, month: month, day: day, time: tokens[2], weekday: weekday)
        case 5 where !tokens[0].hasSuffix(","):
            // asctime: Sun Nov  6 08:49:37 1994
            guard let weekday = shortDays.firstIndex(of: tokens[0]), tokens[2].count <= 2, tokens[4].count == 4,
                  let month = month(tokens[1]), let day = number(tokens[2]), let year = number(tokens[4])
            else { return nil }
            return date(year: year, month: month, day: day, time: tokens[3], weekday: weekday)
        default:
            return nil
        }
    }

    /// `secondsSince1970` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7),
    /// the form ``httpDate(_:now:)`` reads first; for years 0 to 9999.
    package static func imfFixdate(secondsSince1970 seconds: Int64) -> String {
        let days = seconds / 86_400 - (seconds % 86_400 < 0 ? 1 : 0)  // rounded down, never negated (-Int64.min traps)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: Int(days))
        let weekday = Int(((days % 7) + 10) % 7)  // 0 = Monday; 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(shortDays[weekday].capitalized), \(two(day)) \(months[month - 1].capitalized) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// The value of `text` if it is ASCII digits only (`Int("+5")` would accept a sign).
    private static func number(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.count <= 9, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }

    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name).map { $0 + 1 }
    }

    /// RFC 9110: a two-digit year that looks more than 50 years in the future is in the past
    /// century.
    private static func fullYear(_ shortYear: Int, now: Date) -> Int? {
        let daysSince1970 = (now.timeIntervalSince1970 / 86_400).rounded(.down)
        guard daysSince1970.isFinite, abs(daysSince1970) < 1e8 else { return nil }
        let currentYear = civil(fromDays: Int(daysSince1970)).year
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    /// The date, or `nil` if any field is out of range or `weekday` (0 = Monday) is not the
    /// date's day of the week: a date whose parts disagree is garbage, not a guess.
    private static func date(year: Int, month: Int, day: Int, time: String, weekday: Int) -> Date? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }),
              let hour = number(parts[0]), let minute = number(parts[1]), let second = number(parts[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1...12).contains(month), (1...9999).contains(year),
              (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        // 1970-01-01 was a Thursday (3 with Monday as 0).
        guard ((days + 3) % 7 + 7) % 7 == weekday else { return nil }
        let seconds = Double(days) * 86_400 + Double(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSince1970: seconds)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
