import Foundation

// Apart from RetryAfter.swift, so that the parser compiles without HTTPResponse and what it
// brings in (the fuzz targets in Fuzz/ compile RetryAfter.swift alone).
extension RetryAfter {
    /// The number of seconds the response's `Retry-After` header asks for, or `nil`.
    public static func seconds(in response: HTTPResponse?, now: Date = Date()) -> TimeInterval? {
        seconds(from: response?.value(forHTTPHeaderField: "Retry-After"), now: now)
    }
}
