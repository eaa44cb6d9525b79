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

    /// The pair's bytes: `String` equality is canonical equivalence ("K", U+212A KELVIN SIGN,
    /// equals "K"), which would hand the URL built for one spelling to another that `URLBuilder`
    /// refuses.
    private struct Key: Hashable {
        let base: [UInt8]
        let endpoint: [UInt8]

        init(base: String, endpoint: String) {
            self.base = Array(base.utf8)
            self.endpoint = Array(endpoint.utf8)
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
