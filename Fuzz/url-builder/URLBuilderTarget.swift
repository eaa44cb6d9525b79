// Fuzz target for `URLBuilder` (Sources/Transit/Requests/URLBuilder.swift). The input is
// `base` LF `endpoint`; an input without LF is an endpoint under https://api.example.com/v1.
//
// Invariants:
// - the builder only ever throws URLError(.badURL), or URLRequestError.credentialsInURL for a
//   base whose user-info Foundation reads (a URL with user-info is never built);
// - a built URL keeps the base's scheme, host and port (Foundation's reading) and has no user-info;
// - its query and fragment are the endpoint's, byte for byte; its path is the base's path and the
//   endpoint's path joined with one "/" (or the base's path alone for an empty endpoint path);
// - it stays under the base path: with "%2E" read as "." and "%2F", "%5C", "\" as "/" (as lenient
//   servers do) and dot segments removed (RFC 3986 §5.2.4), the base path is a prefix of the built
//   path, segment-wise;
// - libcurl (what URLSession uses on Linux) accepts the built URL and reads the same scheme, host,
//   port and user as it reads in the base and as Foundation reads, and a path (after its own
//   dot-segment removal) that stays under the base path.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let defaultBase = "https://api.example.com/v1"

func fuzzTarget(_ bytes: [UInt8]) {
    let base: String, endpoint: String
    if let newline = bytes.firstIndex(of: 10) {
        base = String(decoding: bytes[..<newline], as: UTF8.self)
        endpoint = String(decoding: bytes[(newline + 1)...], as: UTF8.self)
    } else {
        base = defaultBase
        endpoint = String(decoding: bytes, as: UTF8.self)
    }

    let url: URL
    do {
        url = try URLBuilder.url(base: base, endpoint: endpoint)
    } catch let error as URLError where error.code == .badURL {
        return
    } catch let error as URLRequestError {
        guard case .credentialsInURL = error else { fail("the builder threw \(error), not URLError(.badURL)") }
        let parts = URLComponents(string: base)
        require(parts?.percentEncodedUser != nil || parts?.percentEncodedPassword != nil, "the builder refused user-info in \(base.debugDescription), which has none")
        return
    } catch {
        fail("the builder threw \(error), not URLError(.badURL)")
    }

    let built = url.absoluteString
    guard let baseParts = URLComponents(string: base) else { fail("the base was accepted but URLComponents cannot read it") }
    guard let parts = URLComponents(string: built) else { fail("URLComponents cannot read the built URL \(built.debugDescription)") }

    // Foundation's reading of the built URL keeps the base's authority, which has no user-info.
    require(parts.percentEncodedUser == nil && parts.percentEncodedPassword == nil, "the built URL \(built.debugDescription) carries user-info")
    require(parts.scheme?.lowercased() == baseParts.scheme?.lowercased(), "scheme \(String(describing: parts.scheme)) differs from the base's")
    require(parts.percentEncodedUser == baseParts.percentEncodedUser, "user \(String(describing: parts.percentEncodedUser)) differs from the base's \(String(describing: baseParts.percentEncodedUser))")
    require(parts.percentEncodedPassword == baseParts.percentEncodedPassword, "password differs from the base's")
    require(parts.percentEncodedHost == baseParts.percentEncodedHost, "host \(String(describing: parts.percentEncodedHost)) differs from the base's \(String(describing: baseParts.percentEncodedHost))")
    require(parts.port == baseParts.port, "port \(String(describing: parts.port)) differs from the base's \(String(describing: baseParts.port))")

    // Query, fragment and path as the rules say.
    let (endpointPath, query, fragment) = split(endpoint)
    require(parts.percentEncodedQuery == query, "query \(String(describing: parts.percentEncodedQuery)) is not the endpoint's \(String(describing: query))")
    require(parts.percentEncodedFragment == fragment, "fragment \(String(describing: parts.percentEncodedFragment)) is not the endpoint's \(String(describing: fragment))")
    let tail = endpointPath.drop { $0 == "/" }
    let basePath = baseParts.percentEncodedPath
    var trimmedBase = Substring(basePath)
    while trimmedBase.hasSuffix("/") { trimmedBase.removeLast() }
    let expectedPath = tail.isEmpty ? basePath : trimmedBase + "/" + tail
    require(parts.percentEncodedPath == expectedPath, "path \(parts.percentEncodedPath.debugDescription) is not \(expectedPath.debugDescription)")

    // Under the base path, as a server resolves it.
    let root = resolved(basePath)
    require(isUnder(resolved(parts.percentEncodedPath), root),
            "the built path \(parts.percentEncodedPath.debugDescription) resolves to \(resolved(parts.percentEncodedPath).debugDescription), outside the base path \(root.debugDescription)")

    // libcurl's reading: the built URL (what is sent) must be readable, with the base's authority
    // as Foundation read it; a base that libcurl reads too must not read differently.
    let curlBuilt: CurlURL
    switch Curl.parse(built) {
    case .success(let parsed): curlBuilt = parsed
    case .failure(let error): fail("libcurl refuses the built URL \(built.debugDescription) (CURLUcode \(error.code))")
    }
    if case .success(let curlBase) = Curl.parse(base) {
        require(curlBuilt.scheme == curlBase.scheme && curlBuilt.host == curlBase.host && curlBuilt.port == curlBase.port
                    && decoded(curlBuilt.user) == decoded(curlBase.user),
                "libcurl reads the built URL's authority as \(curlBuilt) but the base's as \(curlBase)")
    }
    // libcurl decodes a percent-encoded host, keeps an IPv6 zone apart and writes IP addresses in
    // their canonical form; compare the decoded names and the addresses.
    let foundationHost = parts.host.map(canonicalHost)
    require(curlBuilt.host.map(canonicalHost) == foundationHost,
            "libcurl reads the host \(String(describing: curlBuilt.host)), Foundation \(String(describing: parts.host))")
    let scheme = parts.scheme?.lowercased()
    let foundationPort = parts.port.map(String.init) ?? (scheme == "https" ? "443" : "80")
    require(curlBuilt.port == foundationPort, "libcurl reads the port \(String(describing: curlBuilt.port)), Foundation \(foundationPort)")
    require(curlBuilt.scheme?.lowercased() == scheme, "libcurl reads the scheme \(String(describing: curlBuilt.scheme)), Foundation \(String(describing: scheme))")
    require(decoded(curlBuilt.user) == decoded(parts.percentEncodedUser), "libcurl reads the user \(String(describing: curlBuilt.user)), Foundation \(String(describing: parts.percentEncodedUser))")
    let curlPath = curlBuilt.path ?? "/"
    require(isUnder(resolved(curlPath), root), "libcurl sends the path \(curlPath.debugDescription), outside the base path \(root.debugDescription)")
}

/// The endpoint's path, its query (after the first `?`) and fragment (after the first `#`).
private func split(_ endpoint: String) -> (path: Substring, query: String?, fragment: String?) {
    var rest = Substring(endpoint)
    var fragment: String?
    if let hash = rest.firstIndex(of: "#") {
        fragment = String(rest[rest.index(after: hash)...])
        rest = rest[..<hash]
    }
    var query: String?
    if let mark = rest.firstIndex(of: "?") {
        query = String(rest[rest.index(after: mark)...])
        rest = rest[..<mark]
    }
    return (rest, query, fragment)
}

/// `text` percent-decoded (Foundation and libcurl encode different characters of a user name).
private func decoded(_ text: String?) -> String? {
    text.map { $0.removingPercentEncoding ?? $0 }
}

/// An IP address in its canonical form (an IPv6 zone dropped) (as `inet_ntop` writes it, IPv4 in any form `inet_aton`
/// reads), any other name lowercased.
private func canonicalHost(_ host: String) -> String {
    var name = host
    if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast().prefix { $0 != "%" }) }
    var buffer = [CChar](repeating: 0, count: 64)
    if name.contains(":") {
        var address = in6_addr()
        if inet_pton(AF_INET6, name, &address) == 1, inet_ntop(AF_INET6, &address, &buffer, 64) != nil {
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    } else {
        var address = in_addr()
        if inet_aton(name, &address) != 0, inet_ntop(AF_INET, &address, &buffer, 64) != nil {
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
    return name.lowercased()
}

/// `path` as a lenient server resolves it: "%2E" read as ".", "%2F", "%5C" and "\\" as "/", then
/// each "." or ".." segment removed with the segment before it (RFC 3986 §5.2.4); no trailing
/// slash.
func resolved(_ path: String) -> String {
    var decoded = path
    for (escape, character) in [("%2e", "."), ("%2f", "/"), ("%5c", "/"), ("\\", "/")] {
        decoded = decoded.replacingOccurrences(of: escape, with: character, options: .caseInsensitive)
    }
    var output: [Substring] = []
    for segment in decoded.split(separator: "/", omittingEmptySubsequences: false).dropFirst(decoded.hasPrefix("/") ? 1 : 0) {
        if segment == "." { continue }
        if segment == ".." {
            _ = output.popLast()
            continue
        }
        output.append(segment)
    }
    while output.last == "" { output.removeLast() }
    return output.isEmpty ? "" : "/" + output.joined(separator: "/")
}

/// `true` if `path` is `root` or below it (both resolved).
func isUnder(_ path: String, _ root: String) -> Bool {
    root.isEmpty || path == root || path.hasPrefix(root + "/")
}
