import Foundation

/// A field of `/proc/self/status` in KiB, -1 where it cannot be read (`VmHWM`: peak resident set; `VmRSS`: current).
public func procStatusKiB(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
    }
    return -1
}
