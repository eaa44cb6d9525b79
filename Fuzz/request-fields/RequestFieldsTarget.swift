// Fuzz target for `HTTPClient.validate(_:)` (Sources/Transit/Client/HTTPClient+Checks.swift),
// the client's check of every field of the final request before anything reaches a transport.
//
// The input: 8 bytes, the bit pattern of `timeoutInterval` (little-endian); a flags byte (bit 0:
// an `httpBodyStream`); then lines (LF): the URL, the method (an empty line leaves it unset) and
// up to 16 header lines `name:value` (CR, NUL and other control bytes kept).
//
// Invariants:
// - the request is refused exactly when one of the documented rules is broken, each read back
//   from the request as Foundation keeps it: the URL is `http`/`https` (any case) with a
//   non-empty host and no user or password (Foundation's reading); the timeout is above zero and
//   at most `URLRequest.maximumTimeoutInterval`; the method is an RFC 9110 token; every header
//   name is a token and every value has no control byte but HT; there is no body stream;
// - the refusal names a broken rule (its `URLRequestError` case);
// - an accepted timeout converts as Foundation converts it on Linux (`Int(seconds) * 1000`
//   milliseconds) and as other transports do (whole nanoseconds in an `Int64`) without a trap;
// - a refused URL is shown redacted: no user or password a URL parser reads in it.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

func fuzzTarget(_ bytes: [UInt8]) {
    guard bytes.count >= 9 else { return }
    var pattern: UInt64 = 0
    for (index, byte) in bytes.prefix(8).enumerated() { pattern |= UInt64(byte) << (8 * UInt64(index)) }
    let flags = bytes[8]
    let lines = bytes[9...].split(separator: 10, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard let urlText = lines.first, let url = URL(string: urlText) else { return }

    var request = URLRequest(url: url)
    request.timeoutInterval = Double(bitPattern: pattern)
    if lines.count > 1, !lines[1].isEmpty { request.httpMethod = lines[1] }
    var headers: [String: String] = [:]
    for line in lines.dropFirst(2).prefix(16) {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[String(line[..<colon])] = String(line[line.index(after: colon)...])
    }
    if !headers.isEmpty { request.allHTTPHeaderFields = headers }
    if flags & 1 != 0 { request.httpBodyStream = InputStream(data: Data("b".utf8)) }

    let verdict = HTTPClient.validate(request)

    // The rules, read back from the request.
    let sentURL = request.url
    let scheme = sentURL?.scheme?.lowercased()
    let urlOK = (scheme == "http" || scheme == "https") && sentURL?.host?.isEmpty == false
    let userInfo = sentURL?.user != nil || sentURL?.password != nil
    let timeout = request.timeoutInterval
    let timeoutOK = timeout > 0 && timeout <= URLRequest.maximumTimeoutInterval
    let methodOK = request.httpMethod.map(isToken) ?? true
    let fields = request.allHTTPHeaderFields ?? [:]
    let headersOK = fields.allSatisfy { isToken($0.key) && $0.value.utf8.allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) } }
    let streamOK = request.httpBodyStream == nil
    let allOK = sentURL != nil && urlOK && !userInfo && timeoutOK && methodOK && headersOK && streamOK

    guard let verdict else {
        require(allOK, "accepted a request that breaks a rule: url \(String(describing: sentURL?.absoluteString)) ok \(urlOK) user-info \(userInfo), timeout \(timeout), method \(String(describing: request.httpMethod)), headers \(fields), stream \(!streamOK)")
        // Foundation's conversion on Linux, and a nanosecond clock's.
        let (milliseconds, overflow) = Int(timeout).multipliedReportingOverflow(by: 1000)
        require(!overflow && milliseconds >= 0, "the timeout \(timeout) overflows as milliseconds")
        require(timeout * 1e9 < 9.2e18, "the timeout \(timeout) overflows as nanoseconds")
        return
    }
    require(!allOK, "refused a request that keeps every rule: \(verdict)")
    switch verdict {
    case .invalidURL:
        require(sentURL == nil, "invalidURL for a request with a URL")
    case .unsupportedURL(let shown):
        require(!urlOK, "unsupportedURL for \(String(describing: sentURL?.absoluteString))")
        requireRedacted(shown)
    case .credentialsInURL(let shown):
        require(userInfo, "credentialsInURL for a URL without user-info")
        requireRedacted(shown)
    case .invalidTimeout(let value):
        require(!timeoutOK && value.bitPattern == timeout.bitPattern, "invalidTimeout(\(value)) for \(timeout)")
    case .invalidMethod(let method):
        require(!methodOK && method == request.httpMethod, "invalidMethod(\(method.debugDescription))")
    case .invalidHeaderName(let name):
        require(!isToken(name) && fields[name] != nil, "invalidHeaderName(\(name.debugDescription))")
    case .invalidHeaderValue(let name):
        require(fields[name].map { !$0.utf8.allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) } } == true, "invalidHeaderValue(\(name.debugDescription))")
    case .bodyStreamNotSupported:
        require(!streamOK, "bodyStreamNotSupported without a stream")
    case .invalidBearerToken:
        fail("invalidBearerToken from the client's check")
    case .colonInBasicUsername, .controlCharacterInBasicUsername, .controlCharacterInBasicPassword:
        fail("\(verdict) from the client's check")
    }
}

/// An RFC 9110 token, read here independently of the library.
private func isToken(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

/// `shown`, a URL as an error keeps it, has no user name or password that URLComponents reads
/// (user-info is `***`).
private func requireRedacted(_ shown: String) {
    guard let parts = URLComponents(string: shown) else { return }
    require(parts.password == nil && (parts.user == nil || parts.user == "***"), "the error shows user-info: \(shown.debugDescription)")
}
