import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Joins a base URL and an endpoint into the URL a request is sent to.
enum URLBuilder {
    /// `base` must be an absolute http(s) URL with a host; `endpoint` is appended to its path
    /// with exactly one `/` between them and may carry a query string and a fragment.
    ///
    /// - Throws: `URLError(.badURL)` when either part cannot form such a URL.
    static func url(base: String, endpoint: String) throws -> URL {
        guard let baseComponents = URLComponents(string: base.trimmingCharacters(in: .whitespaces)),
              let scheme = baseComponents.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = baseComponents.host, !host.isEmpty,
              baseComponents.query == nil, baseComponents.fragment == nil
        else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "Invalid base URL '\(base)': it needs an http or https scheme and a host, and no query."])
        }
        guard !endpoint.contains("://") else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "Invalid endpoint '\(endpoint)': endpoints are paths relative to the base URL."])
        }
        var path = baseComponents.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        var tail = Substring(endpoint)
        while tail.hasPrefix("/") { tail.removeFirst() }
        var prefix = base.trimmingCharacters(in: .whitespaces)
        // Rebuild from the parsed parts so that a trailing slash or query on the base cannot leak in.
        prefix = "\(scheme)://\(baseComponents.percentEncodedHost ?? host)"
        if let port = baseComponents.port { prefix += ":\(port)" }
        if let user = baseComponents.percentEncodedUser {
            let password = baseComponents.percentEncodedPassword.map { ":\($0)" } ?? ""
            prefix = "\(scheme)://\(user)\(password)@" + prefix.dropFirst(scheme.count + 3)
        }
        let joined = tail.isEmpty ? prefix + path : prefix + path + "/" + tail
        guard let components = URLComponents(string: joined), let url = components.url, url.host != nil else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "Invalid endpoint '\(endpoint)': '\(joined)' is not a valid URL."])
        }
        return url
    }
}
