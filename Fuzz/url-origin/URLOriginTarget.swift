// Fuzz target for `URLOrigin` (Sources/Transit/Requests/URLOrigin.swift), the one-scan reader
// of a URL's origin and default request key that the rate limiter, the shared cooldowns, host
// failover and credential scopes ask of every request, with `RequestKey.firstSegment(of:)`.
//
// The input: the bytes of a URL string.
//
// Invariants:
// - on the raw bytes, `plain(_:withFirstSegment:)` never reads outside them (the address
//   sanitizer watches) and, when it answers, gives ASCII shaped `scheme://host:port` (scheme and
//   host lowercased, 1–5 port digits), then `/` and an unreserved segment for a key;
// - for every URL Foundation reads from the text — alone, and relative to a base — the fast path
//   gives exactly Foundation's answer, byte for byte: `key`, `origin` and `hostOrigin` equal
//   `foundationKey`, `foundationOrigin` and `foundationHostOrigin`; and `plainSchemeAndHost`, when
//   it answers, is Foundation's scheme and host, lowercased.
import Foundation

func fuzzTarget(_ bytes: [UInt8]) {
    // An allocation of exactly the input's size, so the address sanitizer sees a read one byte
    // past the end (an array's storage may be larger than its count).
    let exact = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    defer { exact.deallocate() }
    _ = exact.initialize(from: bytes)
    for withSegment in [false, true] {
        guard let answer = URLOrigin.plain(UnsafeBufferPointer(exact), withFirstSegment: withSegment) else { continue }
        checkShape(answer, withSegment: withSegment)
    }
    let text = String(decoding: bytes, as: UTF8.self)
    if let url = URL(string: text) { compare(url, text) }
    if let relative = URL(string: text, relativeTo: base) { compare(relative, text) }
}

private let base = URL(string: "https://Base.Example:8443/v1/items?q=1")

/// `scheme://host:port` (and `/segment`), as documented.
private func checkShape(_ answer: String, withSegment: Bool) {
    let bytes = Array(answer.utf8)
    require(bytes.allSatisfy { $0 < 0x80 }, "a fast-path answer that is not ASCII: \(answer.debugDescription)")
    guard let separator = answer.range(of: "://") else { fail("no :// in \(answer.debugDescription)") }
    let scheme = answer[..<separator.lowerBound]
    require(!scheme.isEmpty && scheme.utf8.allSatisfy { isLower($0) || isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E },
            "scheme \(String(scheme).debugDescription) in \(answer.debugDescription)")
    var rest = answer[separator.upperBound...]
    var segment: Substring?
    if withSegment {
        guard let slash = rest.firstIndex(of: "/") else { fail("a key without /: \(answer.debugDescription)") }
        segment = rest[rest.index(after: slash)...]
        rest = rest[..<slash]
    }
    guard let colon = rest.lastIndex(of: ":") else { fail("no port in \(answer.debugDescription)") }
    let host = rest[..<colon], port = rest[rest.index(after: colon)...]
    require(!host.isEmpty && host.utf8.allSatisfy { isLower($0) || isDigit($0) || $0 == 0x2E || $0 == 0x2D },
            "host \(String(host).debugDescription) in \(answer.debugDescription)")
    require((1...5).contains(port.utf8.count) && port.utf8.allSatisfy(isDigit), "port \(String(port).debugDescription) in \(answer.debugDescription)")
    if let segment {
        require(segment.utf8.allSatisfy { isLower($0) || isDigit($0) || (0x41...0x5A).contains($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F || $0 == 0x7E },
                "segment \(String(segment).debugDescription) in \(answer.debugDescription)")
    }
}

/// The fast path against Foundation's accessors, for one URL.
private func compare(_ url: URL, _ text: String) {
    let subject = "\(text.debugDescription) (absolute \(url.absoluteString.debugDescription))"
    let key = URLOrigin.key(url), foundationKey = URLOrigin.foundationKey(url)
    require(key.utf8.elementsEqual(foundationKey.utf8), "key of \(subject): \(key.debugDescription), Foundation \(foundationKey.debugDescription)")
    let origin = URLOrigin.origin(url), foundationOrigin = URLOrigin.foundationOrigin(url)
    require(origin.utf8.elementsEqual(foundationOrigin.utf8), "origin of \(subject): \(origin.debugDescription), Foundation \(foundationOrigin.debugDescription)")
    let hostOrigin = URLOrigin.hostOrigin(url), foundationHostOrigin = URLOrigin.foundationHostOrigin(url)
    require(hostOrigin == foundationHostOrigin, "host origin of \(subject): \(hostOrigin.debugDescription), Foundation \(foundationHostOrigin.debugDescription)")
    if let (scheme, host) = URLOrigin.plainSchemeAndHost(url) {
        require(scheme == url.scheme?.lowercased() && host == url.host?.lowercased(),
                "scheme and host of \(subject): \(scheme.debugDescription) \(host.debugDescription), Foundation \(String(describing: url.scheme).debugDescription) \(String(describing: url.host).debugDescription)")
    }
}

private func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
