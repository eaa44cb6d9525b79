import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Joins a base URL and an endpoint into the URL a request is sent to.
///
/// The rules, checked byte by byte so that they hold on every platform (Linux Foundation
/// percent-encodes spaces, control characters and broken escapes instead of rejecting them):
/// - `base` is an absolute `http` or `https` URL with a host, and no query or fragment. It may
///   have a port and a path. It may not have user-info (`https://user:password@host`): that
///   fails with ``URLRequestError/credentialsInURL(_:)`` (the URL redacted), as ``HTTPClient``
///   refuses such a URL; send credentials with an ``Authorizer`` or an `Authorization` header.
/// - `endpoint` is a path relative to the base, optionally followed by `?query` and `#fragment`.
///   It is not an absolute URL (no `://` anywhere: percent-encode a URL inside a query value, or
///   add it with `URLRequest.addingQueryItem(name:value:)`).
/// - Both are already percent-encoded: a space, a control character, a non-ASCII character, a
///   character such as `|`, `{` or `"`, or a `%` not followed by two hex digits is an error, never
///   silently encoded.
/// - Neither path has a dot segment: a segment that is `.` or `..`, also when spelled with
///   percent-encoded dots (`%2e`, `%2E%2E`, `.%2e`, …) or when a percent-encoded `/` or `\` inside
///   it makes one (`..%2Fadmin`). URL stacks remove dot segments before sending and some servers
///   decode before they normalise, so `../../admin` under `/tenants/42` would reach `/admin`.
///   Dots elsewhere (`v1.2`, `...`, `.well-known`) and anywhere in the query or fragment are fine.
/// - The base's path and the endpoint's path are joined with exactly one `/`, whatever slashes
///   either side has. The endpoint's own trailing slash is kept. An empty endpoint path (``""``
///   or `"?a=1"`) leaves the base's path exactly as written.
enum URLBuilder {
    /// The URL for `endpoint` under `base`.
    ///
    /// - Throws: `URLError(.badURL)`, with a description of what is wrong, when either part breaks
    ///   the rules above; ``URLRequestError/credentialsInURL(_:)`` for a base with user-info.
    static func url(base: String, endpoint: String) throws -> URL {
        if let problem = HTTPSyntax.uriProblem(in: base, allowing: ":/?#[]@") {
            throw badURL("Invalid base URL \(quoted(base)): \(problem).")
        }
        guard var components = URLComponents(string: base),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty
        else {
            throw badURL("Invalid base URL \(quoted(base)): it needs an http or https scheme and a host, such as https://api.example.com/v1.")
        }
        guard components.percentEncodedQuery == nil, components.percentEncodedFragment == nil else {
            throw badURL("Invalid base URL \(quoted(base)): a base URL has no query or fragment; put the query in the endpoint.")
        }
        if let segment = dotSegment(in: components.percentEncodedPath) {
            throw badURL("Invalid base URL \(quoted(base)): its path has the dot segment \(segment.debugDescription), which URL stacks and servers resolve away; write the path without it.")
        }
        if let problem = authorityProblem(base: base, host: components.percentEncodedHost ?? host) {
            throw badURL("Invalid base URL \(quoted(base)): \(problem).")
        }

        if let problem = HTTPSyntax.uriProblem(in: endpoint, allowing: ":/?#@") {
            throw badURL("Invalid endpoint \(quoted(endpoint)): \(problem).")
        }
        guard !endpoint.contains("://") else {
            throw badURL("Invalid endpoint \(quoted(endpoint)): an endpoint is a path relative to the base URL, not an absolute URL.")
        }
        let (endpointPath, query, fragment) = split(endpoint)
        guard fragment?.contains("#") != true else {
            throw badURL("Invalid endpoint \(quoted(endpoint)): it has more than one '#'.")
        }

        if let segment = dotSegment(in: endpointPath) {
            throw badURL("Invalid endpoint \(quoted(endpoint)): its path has the dot segment \(segment.debugDescription), which would leave the base URL's path (URL stacks and servers resolve it away); name the resource under the base URL directly.")
        }

        let tail = endpointPath.drop { $0 == "/" }
        if !tail.isEmpty {
            var path = Substring(components.percentEncodedPath)
            while path.hasSuffix("/") { path.removeLast() }
            components.percentEncodedPath = path + "/" + tail
        }
        components.percentEncodedQuery = query.map(String.init)
        components.percentEncodedFragment = fragment.map(String.init)
        guard let url = components.url, url.host?.isEmpty == false else {
            throw badURL("Invalid endpoint \(quoted(endpoint)): it does not form a valid URL with \(quoted(base)).")
        }
        // Checked last, so that a base with user-info and another problem names that problem.
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            throw URLRequestError.credentialsInURL(Redaction.redact(url: url))
        }
        return url
    }

    /// What is wrong with the base's user info, host or port, or `nil`. Foundation reads hosts and ports that
    /// libcurl (which URLSession uses on Linux) refuses, so a request to them would fail late with
    /// a transport error, or change what they mean: the user info must be valid URI text, the host
    /// a name of letters, digits and `-._~` (an IPv4 address is one) or a bracketed IPv6 address,
    /// and the port, as written, a number up to 65535.
    private static func authorityProblem(base: String, host: String) -> String? {
        if host.hasPrefix("[") {
            // An optional zone (`%25eth0`) follows the address: up to 15 characters, as libcurl allows.
            let inside = host.dropFirst().dropLast()
            let zone = inside.range(of: "%25").map { inside[$0.upperBound...] }
            let address = inside.range(of: "%25").map { inside[..<$0.lowerBound] } ?? inside
            var parsed = in6_addr()
            guard host.hasSuffix("]"), inet_pton(AF_INET6, String(address), &parsed) == 1,
                  zone.map({ (1...15).contains($0.utf8.count) && $0.utf8.allSatisfy(HTTPSyntax.isUnreserved) }) ?? true
            else { return "the host \(host) is not an IPv6 address" }
        } else if !host.utf8.allSatisfy(HTTPSyntax.isUnreserved) {
            return "the host \(host.debugDescription) may have only letters, digits, '-', '.', '_' and '~', or be an IPv6 address in brackets"
        }
        // The port as written: Foundation reads one beyond Int's range as no port at all.
        guard let schemeEnd = base.range(of: "://") else { return nil }
        let authority = base[schemeEnd.upperBound...].prefix { $0 != "/" }
        if let at = authority.lastIndex(of: "@"), HTTPSyntax.uriProblem(in: String(authority[..<at]), allowing: ":") != nil {
            // Foundation would percent-encode it, '%' included, and so change the credentials.
            return "the user name or password has a character that must be percent-encoded ('@', '[', ']', '/', …)"
        }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        let afterHost = hostAndPort.lastIndex(of: "]").map { hostAndPort[hostAndPort.index(after: $0)...] } ?? hostAndPort
        guard let colon = afterHost.firstIndex(of: ":") else { return nil }
        let port = afterHost[afterHost.index(after: colon)...]
        guard port.isEmpty || (port.count <= 5 && Int(port).map { $0 <= 65_535 } == true) else {
            return "the port \(port) is not a number from 0 to 65535"
        }
        return nil
    }

    /// Splits `endpoint` into its path, its query (after the first `?`) and its fragment (after
    /// the first `#`).
    private static func split(_ endpoint: String) -> (path: Substring, query: Substring?, fragment: Substring?) {
        var rest = Substring(endpoint)
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        return (rest, query, fragment)
    }

    /// The first segment of `path` that is a dot segment once percent-decoded (split at `/`, and
    /// also at a decoded `/` or `\` inside a segment), or `nil`. The segment is returned as written.
    static func dotSegment(in path: some StringProtocol) -> String? {
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            // Only segments made of dots and escapes can decode to one: skip the rest cheaply.
            guard segment.contains(".") || segment.contains("%") else { continue }
            let decoded = HTTPSyntax.percentDecoded(String(segment))
            let parts = decoded.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }
            if parts.contains(where: { $0 == "." || $0 == ".." }) { return String(segment) }
        }
        return nil
    }

    /// `text` quoted for an error message, with credentials redacted (see ``Redaction``).
    private static func quoted(_ text: String) -> String {
        Redaction.redact(urlString: text).debugDescription
    }

    private static func badURL(_ message: String) -> URLError {
        URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
