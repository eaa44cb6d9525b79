import Foundation

// Apart from RetryAfter.swift, so that the parser compiles without HTTPResponse and what it
// brings in (the fuzz targets in Fuzz/ compile RetryAfter.swift alone).
extension RetryAfter {
    /// How long the response's `Retry-After` header asks to wait, or `nil` if it is absent or
    /// unreadable.
    package static func delay(in response: HTTPResponse?, now: Date = Date()) -> Duration? {
        delay(from: response?.value(forHTTPHeaderField: "Retry-After"), now: now)
    }
}
