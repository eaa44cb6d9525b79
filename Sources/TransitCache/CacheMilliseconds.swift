import Foundation

// Instants and durations as the cache stores them, whole milliseconds. Apart from CacheClock.swift,
// which imports Signals, so that the fuzz targets (Fuzz/run) can compile the HTTP cache's files
// without it.

extension Duration {
    /// The duration in whole milliseconds, clamped to `Int64` (sub-millisecond parts round up, so
    /// a positive duration is never zero).
    var cacheMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let fraction = attoseconds / 1_000_000_000_000_000
        let remainder = attoseconds % 1_000_000_000_000_000
        return whole.addingReportingOverflow(fraction + (remainder > 0 ? 1 : 0)).partialValue
    }
}

extension Date {
    init(cacheMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(cacheMilliseconds) / 1000)
    }
}
