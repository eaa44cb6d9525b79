// Fuzz target for the fluent URLRequest helpers that take header names, header values, tokens,
// methods and query items (Sources/Transit/Requests/URLRequest+Fluent.swift, with HTTPSyntax and
// HTTPMethod). The first byte picks the helper; the rest is its input, split at the first 0xFF
// byte (which UTF-8 never contains) into a name and a value.
//
// Invariants:
// - a helper refuses exactly what the rules refuse (checked byte by byte here, independently):
//   a header name that is not an RFC 9110 token, a value with a control character other than
//   HTAB, a bearer token that is empty or has whitespace or a control character, a method that is
//   not a token; the refusal is the right URLRequestError (the helpers throw it);
// - an accepted pair cannot split a header: the request's headers, written as an HTTP/1.1 head
//   and read back by the loopback server's parser, are exactly the headers set, with their values;
// - an accepted method is sent as the request line's method;
// - Basic credentials (a selector byte of 252 or more; the name is the user, the value the
//   password) are refused exactly for a `:` in the user name, then a C0 or C1 control character
//   or DEL in the user name, then in the password (read here on the UTF-8 bytes), with that
//   `URLRequestError`; an accepted pair is sent as `Authorization: Basic B` where B decodes to
//   the user's UTF-8 bytes, `:`, the password's, so the first colon splits them where they were
//   given, and the header cannot split a header either;
// - a query item added to a URL reads back (percent-decoded) as the same name and value, after
//   the query the URL already had.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let baseRequest = URLRequest(url: URL(string: "http://127.0.0.1:8080/path?kept=1&flag")!)

private let tokenBytes = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

private func isToken(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy(tokenBytes.contains)
}

private func isFieldValue(_ text: String) -> Bool {
    !text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
}

func fuzzTarget(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let rest = bytes.dropFirst()
    let name: String, value: String?
    if let separator = rest.firstIndex(of: 0xFF) {
        name = String(decoding: rest[..<separator], as: UTF8.self)
        value = String(decoding: rest[(separator + 1)...], as: UTF8.self)
    } else {
        name = String(decoding: rest, as: UTF8.self)
        value = nil
    }

    // Selectors from 252 (which earlier seeds give to case 0) check Basic credentials, so the
    // committed seeds keep their helper.
    if selector >= 252 { return checkBasic(name, value ?? "") }
    switch selector % 6 {
    case 0: checkHeader(name, value ?? "", adding: true)
    case 1: checkHeader(name, value ?? "", adding: false)
    case 2: checkContentType(name)
    case 3: checkBearer(name)
    case 4: checkMethod(name)
    default: checkQueryItem(name, value)
    }
}

/// The framing fields, sent under this prefix so that the parser reads their lines without
/// framing a body by them. A field whose own name begins with the prefix is escaped the same way
/// (the prefix is added once more), so that reading back, which removes one prefix, is exact: a
/// header the user names `Fuzz-Framing-Content-Length` is not read back as `Content-Length`.
private let framingPrefix = "Fuzz-Framing-"

/// Whether a field is sent under `framingPrefix`.
private func escaped(_ field: String) -> Bool {
    let lowered = field.lowercased()
    return ["content-length", "transfer-encoding"].contains(lowered) || lowered.hasPrefix(framingPrefix.lowercased())
}

/// The request's headers as an HTTP/1.1 head, read back by the loopback parser.
private func headersOnTheWire(_ request: URLRequest, method: String = "GET") -> [HTTPField] {
    var head = "\(method) /path HTTP/1.1\r\n"
    for (field, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
        head += "\(escaped(field) ? framingPrefix : "")\(field): \(value)\r\n"
    }
    head += "\r\n"
    switch LoopbackRequestParser.parseHead(Array(head.utf8)) {
    case .complete(let parsed):
        require(parsed.method == method, "the method \(method.debugDescription) reads back as \(parsed.method.debugDescription)")
        return parsed.headers.map { header -> HTTPField in
            header.name.lowercased().hasPrefix(framingPrefix.lowercased())
                ? HTTPField(name: String(header.name.dropFirst(framingPrefix.count)), value: header.value) : header
        }
    case .incomplete:
        fail("the head written from the request's headers is incomplete: \(head.debugDescription)")
    case .invalid(let rejection):
        fail("the head written from the request's headers is refused (\(rejection.reason)): \(head.debugDescription)")
    }
}

/// The request a helper returns, or the URLRequestError it throws (any other error fails).
private func outcome(_ helper: () throws -> URLRequest) -> (request: URLRequest?, error: URLRequestError?) {
    do {
        return (try helper(), nil)
    } catch let error as URLRequestError {
        return (nil, error)
    } catch {
        fail("a helper threw \(error), not a URLRequestError")
    }
}

private func trimmedOWS(_ text: String) -> String {
    text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
}

private func checkHeader(_ name: String, _ value: String, adding: Bool) {
    let (request, error) = outcome {
        adding ? try baseRequest.addingValue(value, forHTTPHeaderField: name)
               : try baseRequest.settingValue(value, forHTTPHeaderField: name)
    }
    let expected: URLRequestError? = !isToken(name) ? .invalidHeaderName(name)
        : !isFieldValue(value) ? .invalidHeaderValue(name: name) : nil
    require(error == expected, "header \(name.debugDescription): \(value.debugDescription) gave \(String(describing: error)), expected \(String(describing: expected))")
    if let request {
        checkSent(request, [(name, value)])
    }
}

/// The request sends exactly `headers` (names case-insensitively, values without surrounding
/// whitespace), whatever else Foundation keeps.
private func checkSent(_ request: URLRequest, _ headers: [(String, String)], method: String = "GET") {
    let wire = headersOnTheWire(request, method: method)
    let sent = wire.map { ($0.name.lowercased(), $0.value) }.sorted { $0.0 < $1.0 }
    let expected = headers.map { ($0.0.lowercased(), trimmedOWS($0.1)) }.sorted { $0.0 < $1.0 }
    require(sent.count == expected.count && zip(sent, expected).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 },
            "the request sends the headers \(wire) instead of \(headers)")
}

private func checkContentType(_ contentType: String) {
    let (request, error) = outcome { try baseRequest.sendingBody(Data("x".utf8), contentType: contentType) }
    let expected: URLRequestError? = isFieldValue(contentType) ? nil : .invalidHeaderValue(name: "Content-Type")
    require(error == expected, "Content-Type \(contentType.debugDescription) gave \(String(describing: error))")
    if let request {
        checkSent(request, [("Content-Type", contentType)])
    }
}

private func checkBearer(_ token: String) {
    let (request, error) = outcome { try baseRequest.addingBearerAuthorization(accessToken: token) }
    let valid = !token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }
    require(error == (valid ? nil : .invalidBearerToken), "bearer token \(token.debugDescription) gave \(String(describing: error))")
    if let request {
        checkSent(request, [("Authorization", "Bearer " + token)])
    }
}

private func checkBasic(_ username: String, _ password: String) {
    let (request, error) = outcome { try baseRequest.addingBasicAuthorization(username: username, password: password) }
    let expected: URLRequestError?
    if username.utf8.contains(UInt8(ascii: ":")) {
        expected = .colonInBasicUsername
    } else if hasControl(username) {
        expected = .controlCharacterInBasicUsername
    } else if hasControl(password) {
        expected = .controlCharacterInBasicPassword
    } else {
        expected = nil
    }
    require(error == expected, "Basic \(username.debugDescription):\(password.debugDescription) gave \(String(describing: error))")
    guard let request else { return }
    guard let header = request.value(forHTTPHeaderField: "Authorization"), header.hasPrefix("Basic "),
          let decoded = Data(base64Encoded: String(header.dropFirst(6)))
    else { fail("Basic credentials sent as \(String(describing: request.value(forHTTPHeaderField: "Authorization")))") }
    let bytes = Array(decoded)
    require(bytes == Array(username.utf8) + [UInt8(ascii: ":")] + Array(password.utf8), "the Basic credentials decode to \(bytes)")
    require(bytes.firstIndex(of: UInt8(ascii: ":")) == username.utf8.count, "a server reads another user name in \(bytes)")
    checkSent(request, [("Authorization", header)])
}

/// A C0 control, DEL or a C1 control (`C2 80`–`C2 9F` in UTF-8) in `text`'s bytes.
private func hasControl(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return bytes.indices.contains { index in
        bytes[index] < 0x20 || bytes[index] == 0x7F
            || bytes[index] == 0xC2 && index + 1 < bytes.count && (0x80...0x9F).contains(bytes[index + 1])
    }
}

private func checkMethod(_ name: String) {
    let method = HTTPMethod(rawValue: name)
    let (request, error) = outcome { try baseRequest.withMethod(method) }
    let valid = isToken(method.rawValue)
    require(error == (valid ? nil : .invalidMethod(method.rawValue)), "method \(name.debugDescription) gave \(String(describing: error))")
    if let request {
        require(request.httpMethod == method.rawValue, "the method \(method.rawValue.debugDescription) was set as \(String(describing: request.httpMethod))")
        checkSent(request, [], method: method.rawValue)
    }
}

private func checkQueryItem(_ name: String, _ value: String?) {
    let (request, error) = outcome { try baseRequest.addingQueryItem(name: name, value: value) }
    require(error == nil, "query item \(name.debugDescription)=\(String(describing: value)) was refused: \(String(describing: error))")
    guard let url = request?.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
          let query = components.percentEncodedQuery
    else { fail("the URL with the query item has no query: \(String(describing: request?.url))") }
    require(query.hasPrefix("kept=1&flag&"), "the existing query was not kept: \(query.debugDescription)")
    let added = query.dropFirst("kept=1&flag&".count)
    require(added.utf8.allSatisfy { HTTPSyntax.isUnreserved($0) || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "=") },
            "the added item \(added.debugDescription) has a character that is not percent-encoded")
    // Read back as the loopback server reads a request target.
    let received = LoopbackRequest(method: "GET", target: "/path?" + query)
    let items = received.queryItems
    require(items.count == 3 || (name.isEmpty && value == nil && items.count == 2), "the query \(query.debugDescription) has \(items.count) items")
    if items.count == 3 {
        require(items[2].name == name && items[2].value == value,
                "the item \(name.debugDescription)=\(String(describing: value)) reads back as \(items[2].name.debugDescription)=\(String(describing: items[2].value))")
    }
}
