// Fuzz target for `CredentialScope.allows(_:)` (Sources/Transit/User/CredentialScope.swift): which
// URLs an authorizer's credentials (a bearer token) may be sent to. A wrong `true` sends a token
// to a host outside the scope, or over plain http to a host that is not loopback.
//
// The input: one control byte, then UTF-8 text split at line feeds: every line but the last is a
// host entry of the scope (at most 4: names, `*.suffix` wildcards, any case), the last line is
// the URL. The control byte:
//   bits 0-1  the insecureHTTP rule: 0 refused, 1 and 3 loopbackOnly, 2 allowed
//   bit 2     the scope also names the URL's host as Foundation reads it (its case kept)
//   bit 3     the scope also has the wildcard `*.` + that host without its first label
// (bits 2 and 3 let the fuzzer reach `true` for any host it invents, where the readers' quarrels
// matter). The URL is checked alone and relative to a base.
//
// What the library promises (its doc comments): a URL is allowed when its host is one of the
// scope's hosts (lowercased), or `something.suffix` for an entry `*.suffix` with a non-empty
// `something`, and its scheme is https, or http with `.allowed`, or http with `.loopbackOnly` and
// a loopback host: `localhost`, `::1` or an address of 127.0.0.0/8, written as four decimal
// octets of 1-3 digits without leading zeros (as `inet_pton` reads them), each at most 255, the
// first 127. Scheme and host
// are Foundation's (`url.scheme`, `url.host`), lowercased.
//
// Invariants, for every URL Foundation accepts:
// - exactness: `allows` is that rule, computed here independently on Foundation's scheme and host
//   (`expected`); `isLoopback` of Foundation's host is this harness's loopback rule;
// - no leak as libcurl reads the URL (dlopen'd `libcurl.so.4`, which sends URLSession's requests
//   on Linux; Fuzz/url-builder/Curl.swift): when `allows` is true and libcurl accepts the URL's
//   absolute string, libcurl's scheme is Foundation's; libcurl's host (brackets removed, `%zone`
//   added back, percent-decoded as Foundation decodes it, lowercased) is named by the scope by
//   the same rule — or is the address that Foundation's host denotes (a numeric host the scope
//   names in another spelling: IPv4 by `inet_aton`, `127.1` for `127.0.0.1`; IPv6 by
//   `inet_pton`, `::0` for `::`, the same zone unless Foundation's is empty); and for http under `.loopbackOnly` libcurl's
//   host is loopback by `inet_pton` (127.0.0.0/8 or ::1) or is `localhost`. (A URL libcurl
//   refuses is not sent, so it carries no credentials.)
// - case: the URL with its ASCII letters all upper- or all lowercased (when Foundation still reads
//   the same scheme and host, lowercased) gets the same answer; a scope built from the entries
//   ASCII-upper- or lowercased answers the same, and its `hosts` are the entries lowercased;
// - the fast path `URLOrigin.plainSchemeAndHost`, when it answers, is Foundation's scheme and
//   host, lowercased.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let control = input.byte()
    let rule: CredentialScope.InsecureHTTP = [.refused, .loopbackOnly, .allowed, .loopbackOnly][Int(control & 3)]
    let lines = String(decoding: input.bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    let text = String(lines.last ?? "")
    let entries = lines.dropLast().suffix(4).map(String.init)
    if let url = URL(string: text) {
        check(url, text: text, relativeTo: nil, entries: entries, control: control, rule: rule)
    }
    if let url = URL(string: text, relativeTo: base) {
        check(url, text: text, relativeTo: base, entries: entries, control: control, rule: rule)
    }
}

private let base = URL(string: "https://Base.Example.com:8443/v1/")

private func check(_ url: URL, text: String, relativeTo base: URL?, entries: [String], control: UInt8,
                   rule: CredentialScope.InsecureHTTP) {
    var hosts = entries
    if control & 4 != 0, let host = url.host { hosts.append(host) }
    if control & 8 != 0, let host = url.host, let dot = host.firstIndex(of: ".") { hosts.append("*" + host[dot...]) }
    let scope = CredentialScope(hosts: Set(hosts), insecureHTTP: rule)
    let allowed = scope.allows(url)
    let scheme = url.scheme?.lowercased(), host = url.host?.lowercased()
    let lowered = Set(hosts.map { $0.lowercased() })
    let subject = "\(text.debugDescription) (absolute \(url.absoluteString.debugDescription); Foundation: scheme "
        + "\(String(describing: scheme)), host \(String(describing: host).debugDescription)) with hosts "
        + "\(lowered.sorted()) and insecureHTTP \(rule)"

    // The documented rule.
    require(scope.hosts == lowered, "hosts \(scope.hosts.sorted()) are not the entries lowercased \(lowered.sorted())")
    let answer = expected(scheme: scheme, host: host, hosts: lowered, rule: rule)
    require(allowed == answer, "allows is \(allowed), the documented rule says \(answer): \(subject)")
    if let host {
        require(CredentialScope.isLoopback(host) == isLoopbackByRule(host),
                "isLoopback(\(host.debugDescription)) is \(CredentialScope.isLoopback(host)), the documented rule says \(isLoopbackByRule(host))")
    }

    // The fast path is Foundation's reading.
    if let (fastScheme, fastHost) = URLOrigin.plainSchemeAndHost(url) {
        require(fastScheme == scheme && fastHost == host,
                "plainSchemeAndHost is \(fastScheme.debugDescription) \(fastHost.debugDescription): \(subject)")
    }

    // Where libcurl sends it.
    if allowed, case .success(let curl) = Curl.parse(url.absoluteString) {
        require(curl.scheme?.lowercased() == scheme, "libcurl reads the scheme \(String(describing: curl.scheme)): \(subject)")
        var curlHost = curl.host ?? ""
        if curlHost.hasPrefix("["), curlHost.hasSuffix("]") { curlHost = String(curlHost.dropFirst().dropLast()) }
        if let zone = curl.zoneID { curlHost += "%" + (zone.removingPercentEncoding ?? zone) }   // Foundation decodes it
        curlHost = curlHost.lowercased()
        require(isNamed(curlHost, by: lowered) || sameAddress(host ?? "", curlHost),
                "credentials would go to \(curlHost.debugDescription) as libcurl reads the URL, outside the scope: \(subject)")
        if scheme == "http", rule == .loopbackOnly {
            require(isLoopbackAddress(curlHost), "credentials would go over http to \(curlHost.debugDescription) as libcurl reads the URL, not loopback: \(subject)")
        }
    }

    // Case changes nothing.
    for changed in [asciiUppercased(text), asciiLowercased(text)] where changed != text {
        guard let other = URL(string: changed, relativeTo: base),
              other.scheme?.lowercased() == scheme, other.host?.lowercased() == host else { continue }
        require(scope.allows(other) == allowed, "\(changed.debugDescription) gets \(!allowed), \(text.debugDescription) \(allowed): \(subject)")
    }
    for changed in [hosts.map(asciiUppercased), hosts.map(asciiLowercased)] {
        let other = CredentialScope(hosts: Set(changed), insecureHTTP: rule)
        require(other.allows(url) == allowed, "the scope of \(changed.sorted()) answers \(!allowed): \(subject)")
    }
}

/// The documented rule on Foundation's scheme and host (lowercased).
private func expected(scheme: String?, host: String?, hosts: Set<String>, rule: CredentialScope.InsecureHTTP) -> Bool {
    guard let scheme, let host, !host.isEmpty, isNamed(host, by: hosts) else { return false }
    if scheme == "https" { return true }
    guard scheme == "http" else { return false }
    return rule == .allowed || (rule == .loopbackOnly && isLoopbackByRule(host))
}

/// `host` is one of `hosts`, or `label.suffix` (a non-empty `label`) for an entry `*.suffix`.
private func isNamed(_ host: String, by hosts: Set<String>) -> Bool {
    if hosts.contains(host) { return true }
    return hosts.contains { entry in
        guard entry.hasPrefix("*.") else { return false }
        let dotSuffix = entry.dropFirst()
        return host.hasSuffix(dotSuffix) && !host.dropLast(dotSuffix.count).isEmpty
    }
}

/// `localhost`, `::1` (brackets or not), or four decimal octets of 1-3 digits without a leading
/// zero, at most 255, the first 127.
private func isLoopbackByRule(_ host: String) -> Bool {
    var bare = Substring(host)
    if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
    if bare == "localhost" || bare == "::1" { return true }
    let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4 else { return false }
    for octet in octets {
        guard (1...3).contains(octet.utf8.count), octet.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              octet == "0" || !octet.hasPrefix("0"), let value = Int(octet), value <= 255 else { return false }
    }
    return Int(octets[0]) == 127
}

/// A loopback address by the C library's reading (`inet_pton`): 127.0.0.0/8 or ::1; or `localhost`,
/// which libcurl resolves to loopback itself.
private func isLoopbackAddress(_ host: String) -> Bool {
    if host == "localhost" { return true }
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, host, &v6) == 1 {
        return withUnsafeBytes(of: &v6) { $0.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]) }
    }
    return false
}

/// Whether `curlHost` is a dotted-quad IPv4 address (`inet_pton`) and `host` denotes the same
/// address by `inet_aton` (which reads `127.1`, `0x7f.0.0.1`, `0177.0.0.1`), or both are the same
/// IPv6 address by `inet_pton` with the same zone.
private func sameAddress(_ host: String, _ curlHost: String) -> Bool {
    var read = in_addr(), sent = in_addr()
    if !host.isEmpty, inet_aton(host, &read) != 0, inet_pton(AF_INET, curlHost, &sent) == 1 { return read.s_addr == sent.s_addr }
    // Split at the first `%` byte: a zone may begin with a combining mark, which makes one
    // Character with the `%`.
    func split(_ text: String) -> (address: [UInt8], zone: [UInt8])? {
        let bytes = Array(text.utf8)
        let percent = bytes.firstIndex(of: UInt8(ascii: "%")) ?? bytes.count
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(decoding: bytes[..<percent], as: UTF8.self), &address) == 1 else { return nil }
        return (withUnsafeBytes(of: &address) { Array($0) }, Array(bytes[percent...]))
    }
    guard let read6 = split(host), let sent6 = split(curlHost) else { return false }
    // `[::1%25]`: Foundation reads an empty zone (host `::1%`), libcurl the zone `25` (it skips
    // `%25` only before a non-empty zone). A malformed zone the scope would have to name.
    return read6.address == sent6.address && (read6.zone == sent6.zone || read6.zone == [UInt8(ascii: "%")])
}

private func asciiUppercased(_ text: String) -> String {
    String(decoding: text.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
}

private func asciiLowercased(_ text: String) -> String {
    String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
}
