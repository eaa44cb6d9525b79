import Foundation

// Apart from RetryAfter.swift, so that the parser compiles without HTTPResponse and what it
// brings in (the fuzz targets in Fuzz/ compile RetryAfter.swift alone).
extension RetryAfter {
    /// How long the response's `Retry-After` header asks to wait, or `nil` if it is absent or
    /// unreadable; an HTTP-date is measured from the response's own `Date` header when it has a
    /// readable one (the server's clock), from `now` otherwise.
    package static func delay(in response: HTTPResponse?, now: Date = Date()) -> Duration? {
        delay(from: response?.value(forHTTPHeaderField: "Retry-After"), serverDate: response?.value(forHTTPHeaderField: "Date"), now: now)
    }
}
