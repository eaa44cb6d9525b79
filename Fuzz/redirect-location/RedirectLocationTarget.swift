// Fuzz target for `RedirectPolicy.next(after:to:hops:sensitiveHeaders:)`
// (Sources/Transit/Policies/RedirectPolicy.swift): what the client does with a 3xx — deliver
// it, follow it with which request, or fail — and so whether credentials go to another origin.
//
// The input: four choice bytes (status, method, policy mode and hop counts, flags), then lines
// (LF): the current URL (empty: a default https URL with a fragment), the Location value, up
// to 32 header names the client marks sensitive (comma-separated), and up to 32 more request
// headers as `name:value` (the first of them is also a second Location field, when a flag says
// so). The request carries Authorization, Cookie and Proxy-Authorization (in varying case),
// the sensitive headers, and perhaps a body or a body file.
//
// Invariants:
// - `never`, a status other than 301/302/303/307/308, or no Location: delivered (nil);
// - a followed Location is Foundation's `URL(string: location, relativeTo: current)` — scheme,
//   user, host, port, path and query as Foundation reads them there — with the current
//   fragment when it has none; only http and https are followed (also as libcurl reads the next
//   URL); a refused Location is exactly one Foundation cannot resolve to an http(s) URL with a
//   host that `URLComponents` reads too (from a URL without a scheme, Foundation resolves
//   `./HTTPS://h:p` to a URL with a port that is no number, which only `URL` accepts);
// - https → http is never followed (as Foundation and as libcurl read the schemes);
// - a Location with user-info (as `URL` or `URLComponents` reads the resolved target) is never
//   followed: refused with `credentialsInLocation` (the status, and the origin without the
//   user-info), unless refused as insecure first; a followed URL has no user-info as Foundation
//   and as libcurl read it;
// - hops stay below `maxRedirects`: at the limit, `tooManyRedirects`;
// - **no credential crosses origins**: when the next request still carries Authorization,
//   Cookie, Proxy-Authorization, a header `Redaction` treats as secret (X-API-Key, …) or a
//   sensitive header (names compared without ASCII case),
//   libcurl — which sends the request on Linux — reads the same origin (scheme, lowercased
//   host, port with the scheme's default) in the current and the next URL; `sameOrigin` follows
//   only such redirects;
// - 303 (but HEAD), and 301/302 answering POST, continue as GET without a body, a body file or
//   the content headers; every other redirect keeps the method, the body and the body file;
//   every header that is neither dropped for the origin nor a content header of a dropped body
//   is kept with its value.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let defaultCurrent = "https://api.example.com/v1/posts?page=2#top"
private let statuses = [301, 302, 303, 307, 308, 300, 304, 200, 305, 399, 303, 302]
private let methods: [String?] = [nil, "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "post", "Head", "QUERY"]
private let contentHeaders: Set<String> = ["content-type", "content-length", "content-encoding", "transfer-encoding"]

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let status = statuses[Int(input.byte()) % statuses.count]
    let method = methods[Int(input.byte()) % methods.count]
    let counts = input.byte()
    let flags = input.byte()
    var lines = input.bytes.split(separator: 10, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }[...]
    let currentText = lines.popFirst().flatMap { $0.isEmpty ? nil : $0 } ?? defaultCurrent
    let location = lines.popFirst() ?? ""
    let sensitive = Set((lines.popFirst() ?? "").split(separator: ",").prefix(32).map(String.init))

    guard let current = URL(string: currentText) else { return }
    let mode: RedirectPolicy.Mode = [.follow, .follow, .sameOrigin, .never][Int(counts & 3)]
    let policy = RedirectPolicy(mode, maxRedirects: Int(counts >> 4))
    let hops = Int((counts >> 2) & 3) * 4 + Int(flags >> 6) // 0...15

    var request = URLRequest(url: current)
    request.httpMethod = method
    let credentialSpellings = [["Authorization", "authorization", "AUTHORIZATION"], ["Cookie", "cookie", "COOKIE"],
                               ["Proxy-Authorization", "proxy-authorization", "PROXY-Authorization"]]
    for (index, spellings) in credentialSpellings.enumerated() {
        request.setValue("secret-\(index)", forHTTPHeaderField: spellings[Int((flags >> (2 * index)) & 3) % 3])
    }
    for name in sensitive { request.setValue("sensitive", forHTTPHeaderField: name) }
    // At most 32 more headers (and 32 sensitive ones): FoundationNetworking's `setValue`
    // lowercases every name already set, so hundreds made the setup quadratic (70 % of the run)
    // and tested nothing more.
    for line in lines.prefix(32) {
        guard let colon = line.firstIndex(of: ":") else { continue }
        request.setValue(String(line[line.index(after: colon)...]), forHTTPHeaderField: String(line[..<colon]))
    }
    var bodyFile: URL?
    if flags & 0x20 != 0 {
        request.httpBody = Data("body".utf8)
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        request.setValue("4", forHTTPHeaderField: "Content-Length")
    }
    if flags & 0x10 != 0 { bodyFile = URL(fileURLWithPath: "/tmp/body") }

    var fields = [HTTPField(name: "Content-Length", value: "0")]
    if flags & 0x08 == 0 { fields.append(HTTPField(name: flags & 0x04 == 0 ? "Location" : "location", value: location)) }
    if flags & 0x0A == 0x02 { fields.append(HTTPField(name: "LOCATION", value: lines.first ?? "")) }  // a second Location field
    let head = HTTPResponseHead(url: current, statusCode: status, fields: fields)
    let hasLocation = head.value(forHTTPHeaderField: "Location") != nil

    let outcome = policy.next(after: head, to: TransportRequest(request, bodyFile: bodyFile), hops: hops, sensitiveHeaders: sensitive)

    // Foundation's resolution, the reference for which Location is followed.
    let target = URL(string: head.value(forHTTPHeaderField: "Location") ?? "", relativeTo: current)?.absoluteURL
    let targetScheme = target?.scheme?.lowercased()
    let followable = target != nil && (targetScheme == "http" || targetScheme == "https") && target?.host?.isEmpty == false
        && URLComponents(url: target!, resolvingAgainstBaseURL: false) != nil
    let redirects = [301, 302, 303, 307, 308].contains(status)

    guard let outcome else {
        let delivered = mode == .never || !redirects || !hasLocation
            || (followable && mode == .sameOrigin && !RedirectPolicy.sameOrigin(current, target!))
        require(delivered, "a \(status) to \(location.debugDescription) from \(currentText.debugDescription) was delivered, not followed or refused (mode \(mode), hops \(hops)/\(policy.maxRedirects))")
        return
    }
    require(mode != .never && redirects && hasLocation, "mode \(mode), status \(status), Location present: \(hasLocation) gave \(outcome), not nil")

    let next: TransportRequest
    switch outcome {
    case .failure(.invalidLocation(let reported)):
        require(!followable && reported == status, "Location \(location.debugDescription) from \(currentText.debugDescription) was refused as invalid, but Foundation resolves it to \(String(describing: target))")
        return
    case .failure(.insecureRedirect):
        require(followable && current.scheme?.lowercased() == "https" && targetScheme == "http", "refused as insecure: \(currentText.debugDescription) → \(String(describing: target))")
        return
    case .failure(.credentialsInLocation(let reported, let to)):
        require(followable && reported == status && hasUserInfo(target!), "Location \(location.debugDescription) from \(currentText.debugDescription) was refused for user-info, which Foundation does not read in \(String(describing: target))")
        require(!(current.scheme?.lowercased() == "https" && targetScheme == "http"), "an https → http redirect was refused for user-info, not as insecure")
        require(!to.contains("@") && to == RedirectPolicy.origin(target!), "the refusal names \(to.debugDescription), not the Location's origin without user-info")
        return
    case .failure(.tooManyRedirects(let limit)):
        require(followable && hops >= policy.maxRedirects && limit == policy.maxRedirects, "tooManyRedirects(\(limit)) after \(hops) hops with maxRedirects \(policy.maxRedirects)")
        return
    case .success(let followed):
        next = followed
    }

    // Followed: the Location as Foundation resolves it.
    require(followable, "followed \(location.debugDescription) from \(currentText.debugDescription), which Foundation resolves to \(String(describing: target))")
    require(!hasUserInfo(target!), "followed \(location.debugDescription) from \(currentText.debugDescription), whose target carries user-info")
    require(hops < policy.maxRedirects, "followed after \(hops) hops with maxRedirects \(policy.maxRedirects)")
    guard let target, let nextURL = next.urlRequest.url else { fail("the next request has no URL") }
    let (t, n) = (URLComponents(url: target, resolvingAgainstBaseURL: false), URLComponents(url: nextURL, resolvingAgainstBaseURL: false))
    require(t?.scheme == n?.scheme && t?.percentEncodedUser == n?.percentEncodedUser && t?.percentEncodedPassword == n?.percentEncodedPassword
                && t?.percentEncodedHost == n?.percentEncodedHost && t?.port == n?.port && t?.percentEncodedPath == n?.percentEncodedPath
                && t?.percentEncodedQuery == n?.percentEncodedQuery,
            "the next URL \(nextURL.absoluteString.debugDescription) is not Foundation's resolution \(target.absoluteString.debugDescription)")
    let fragment = target.fragment ?? current.fragment
    require(nextURL.fragment == fragment, "the next URL's fragment is \(String(describing: nextURL.fragment)), not \(String(describing: fragment))")
    require(current.scheme?.lowercased() != "https" || nextURL.scheme?.lowercased() == "https", "followed https → http: \(currentText.debugDescription) → \(nextURL.absoluteString.debugDescription)")

    // Where libcurl sends it.
    let curlCurrent = try? Curl.parse(current.absoluteString).get()
    let curlNext = try? Curl.parse(nextURL.absoluteString).get()
    if let curlNext {
        require(curlNext.user == nil && curlNext.password == nil, "libcurl reads user-info in the next URL \(nextURL.absoluteString.debugDescription)")
        require(curlNext.scheme == "http" || curlNext.scheme == "https", "libcurl reads the next URL's scheme as \(String(describing: curlNext.scheme))")
        if curlCurrent?.scheme == "https" {
            require(curlNext.scheme == "https", "libcurl reads a followed https → http: \(currentText.debugDescription) → \(nextURL.absoluteString.debugDescription)")
        }
    }
    // The credential headers every redirect across origins drops, as the oracle knows them.
    let drop = Set(["authorization", "proxy-authorization", "cookie"]).union(sensitive.map(asciiLowercased))
    let sent = next.urlRequest.allHTTPHeaderFields ?? [:]
    let carriesCredentials = sent.keys.contains { drop.contains(asciiLowercased($0)) || Redaction.isSensitiveHeader($0) }
    if let curlCurrent, let curlNext, carriesCredentials || mode == .sameOrigin {
        require(origin(curlCurrent) == origin(curlNext),
                "\(carriesCredentials ? "credentials go" : "sameOrigin follows") from \(origin(curlCurrent)) to \(origin(curlNext)) as libcurl reads \(current.absoluteString.debugDescription) → \(nextURL.absoluteString.debugDescription)")
    }

    // Method, body and headers.
    let upper = (method ?? "GET").uppercased()
    let becomesGET = status == 303 && upper != "HEAD" || (status == 301 || status == 302) && upper == "POST"
    if becomesGET {
        require(next.urlRequest.httpMethod == "GET" && next.urlRequest.httpBody == nil && next.bodyFile == nil,
                "a \(status) answering \(upper) continues as \(String(describing: next.urlRequest.httpMethod)) with a body: \(next.urlRequest.httpBody != nil || next.bodyFile != nil)")
    } else {
        require(next.urlRequest.httpMethod == request.httpMethod && next.urlRequest.httpBody == request.httpBody && next.bodyFile == bodyFile,
                "a \(status) answering \(upper) continues as \(String(describing: next.urlRequest.httpMethod)), body kept: \(next.urlRequest.httpBody == request.httpBody), body file kept: \(next.bodyFile == bodyFile)")
    }
    // Names compared without ASCII case must be dropped; the policy compares Unicode-lowercased
    // names, which may drop more (KELVIN SIGN lowercases to "k"): harmless, so allowed.
    let crossOrigin = !RedirectPolicy.sameOrigin(current, target)
    let added = Set(sensitive.map { $0.lowercased() })
    for (name, value) in request.allHTTPHeaderFields ?? [:] {
        let lowered = asciiLowercased(name)
        // Every header Redaction treats as secret is dropped too: one list decides both.
        let mustDrop = crossOrigin && (drop.contains(lowered) || Redaction.isSensitiveHeader(name)) || becomesGET && contentHeaders.contains(lowered)
        let mayDrop = mustDrop || crossOrigin && RedirectPolicy.dropsAcrossOrigins(name, sensitiveHeaders: added)
        let kept = next.urlRequest.value(forHTTPHeaderField: name)
        require(mustDrop ? kept == nil : kept == value || mayDrop && kept == nil,
                "header \(name.debugDescription) is \(String(describing: kept)) in the next request (cross-origin: \(crossOrigin), becomes GET: \(becomesGET))")
    }
    require(sent.count <= (request.allHTTPHeaderFields ?? [:]).count, "the next request has headers the request did not: \(sent)")
}

/// Whether Foundation reads user-info in `url`, as `URL` or as `URLComponents`.
private func hasUserInfo(_ url: URL) -> Bool {
    let parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
    return url.user != nil || url.password != nil || parts?.percentEncodedUser != nil || parts?.percentEncodedPassword != nil
}

/// The origin libcurl sends to: scheme, lowercased host, port (the scheme's default if none).
private func origin(_ url: CurlURL) -> String {
    "\(url.scheme ?? "?")://\(asciiLowercased(url.host ?? "?")):\(url.port ?? "?")"
}

private func asciiLowercased(_ text: String) -> String {
    String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
}
