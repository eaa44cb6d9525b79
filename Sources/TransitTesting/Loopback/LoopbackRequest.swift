import Foundation
import Transit

extension Array where Element == HTTPField {
    /// The value of the field `name`, matched without regard to ASCII case (field names are ASCII
    /// tokens, RFC 9110 §5.1): other letters must be the same bytes, so `Hoſt` (long s) or a
    /// Kelvin sign for `K` names another field, as on a real server. Repeated fields are joined
    /// with `", "`, as RFC 9110 allows; `nil` when the field is absent.
    package func value(for name: String) -> String? {
        let values = filter { HTTPSyntax.sameFieldName($0.name, name) }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}

/// A request a ``LoopbackServer`` received, parsed and complete (its whole body was read).
///
/// The server records every request it answers (see ``LoopbackServer/requests``) and hands each
/// to its handler. Malformed requests are answered with `400` and are not recorded.
public struct LoopbackRequest: Sendable, CustomStringConvertible {
    /// The method, as sent (`GET`, `POST`, …).
    public let method: String
    /// The request target exactly as sent on the request line (path and query, percent-encoded).
    public let target: String
    /// The path part of the target, still percent-encoded (`/posts/1`).
    public let path: String
    /// The query part of the target without the `?`, still percent-encoded; `nil` when the target
    /// has no `?`.
    package let query: String?
    /// The protocol version from the request line (`HTTP/1.1`).
    package let version: String
    /// The header fields, in the order they were sent; each name keeps the case the client
    /// used.
    public let headers: [HTTPField]
    /// The body, after removing any chunked transfer-encoding. Empty when there was none.
    public let body: Data
    /// Which connection carried the request: requests sent over one kept-alive connection share
    /// it. Connections are numbered from 1 in the order the server accepted them.
    package let connectionID: Int

    /// Creates a request value, as the server does when it has read one.
    package init(
        method: String,
        target: String,
        version: String = "HTTP/1.1",
        headers: [HTTPField] = [],
        body: Data = Data(),
        connectionID: Int = 0
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.connectionID = connectionID
        var pathPart = Substring(target)
        // Absolute-form (`http://host/path`) targets are reduced to their path.
        if let schemeEnd = target.range(of: "://") {
            let afterScheme = target[schemeEnd.upperBound...]
            pathPart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterScheme[$0...] } ?? "/"
        }
        if let mark = pathPart.firstIndex(of: "?") {
            path = String(pathPart[..<mark])
            query = String(pathPart[pathPart.index(after: mark)...])
        } else {
            path = String(pathPart)
            query = nil
        }
    }

    /// The value of the header `name`, matched case-insensitively (repeated fields joined with
    /// `", "`), or `nil`.
    public func value(forHTTPHeaderField name: String) -> String? {
        headers.value(for: name)
    }

    /// The query's items, percent-decoded, in order (`a=1&b` gives `a: "1"` and `b: nil`). A `+`
    /// stays a `+`, as `URLComponents` has it. Items whose encoding is invalid keep their raw text.
    /// Empty without a query. The value of the first item called `page` is
    /// `request.queryItems.first { $0.name == "page" }?.value`.
    public var queryItems: [URLQueryItem] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { item in
            let decode = { (part: Substring) in String(part).removingPercentEncoding ?? String(part) }
            guard let equals = item.firstIndex(of: "=") else { return URLQueryItem(name: decode(item), value: nil) }
            return URLQueryItem(name: decode(item[..<equals]), value: decode(item[item.index(after: equals)...]))
        }
    }

    /// The path split on `/`, percent-decoded, without empty segments: `/posts/42/` gives
    /// `["posts", "42"]`.
    package var pathComponents: [String] {
        path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
    }

    /// The body decoded as UTF-8, or `nil` if it is not valid UTF-8.
    var text: String? {
        String(data: body, encoding: .utf8)
    }

    public var description: String {
        "\(method) \(target) (\(body.count) body bytes, connection \(connectionID))"
    }
}
