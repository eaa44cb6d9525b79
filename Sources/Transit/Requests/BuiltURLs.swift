import Foundation
import Signals

/// The URLs ``URLBuilder`` built recently, keyed by base URL and endpoint.
///
/// A service sends the same few endpoints again and again (every retry, every poll, every page
/// of a list). Checking a base URL and an endpoint byte by byte, parsing them into
/// `URLComponents` and forming the URL is a visible part of a loopback request on Linux; looking
/// a pair up costs a hash of the two strings. Only URLs that were built are kept: an invalid pair
/// is checked, and refused, every time.
///
/// The table holds at most ``capacity`` entries; when it is full it starts again empty, so
/// endpoints with ever-changing paths (`posts/1`, `posts/2`, …) cost a build each, as without the
/// table, and never more memory than that.
///
/// Thread safety: the table is behind a `Locked`; building runs outside it.
enum BuiltURLs {
    /// The most pairs kept.
    static let capacity = 256

    /// The pair, compared and hashed by its UTF-8 bytes: `String` equality is canonical
    /// equivalence ("K", U+212A KELVIN SIGN, equals "K"), which would hand the URL built for one
    /// spelling to another that `URLBuilder` refuses. The strings are kept as they are (no copy of
    /// their bytes): a native string's bytes are read in place.
    private struct Key: Hashable {
        let base: String
        let endpoint: String

        static func == (lhs: Key, rhs: Key) -> Bool {
            sameBytes(lhs.base, rhs.base) && sameBytes(lhs.endpoint, rhs.endpoint)
        }

        /// Whether the two strings are the same UTF-8 bytes (read in place when both are native).
        private static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
            let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
                rhs.utf8.withContiguousStorageIfAvailable { right -> Bool in
                    guard left.count == right.count else { return false }
                    guard let leftBytes = left.baseAddress, let rightBytes = right.baseAddress else { return true }  // both empty
                    return memcmp(leftBytes, rightBytes, left.count) == 0
                }
            }
            return (compared ?? nil) ?? lhs.utf8.elementsEqual(rhs.utf8)
        }

        func hash(into hasher: inout Hasher) {
            Self.combine(base, into: &hasher)
            Self.combine(endpoint, into: &hasher)
        }

        /// The string's bytes and their count (so "ab" + "c" and "a" + "bc" differ).
        private static func combine(_ string: String, into hasher: inout Hasher) {
            let utf8 = string.utf8
            hasher.combine(utf8.count)
            if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
                Array(utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }
    }

    private static let table = Locked<[Key: URL]>([:])

    /// `URLBuilder.url(base:endpoint:)`, from the table when the pair was built before.
    static func url(base: String, endpoint: String) throws -> URL {
        let key = Key(base: base, endpoint: endpoint)
        if let url = table.withLock({ $0[key] }) { return url }
        let url = try URLBuilder.url(base: base, endpoint: endpoint)
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[key] = url
        }
        return url
    }
}
