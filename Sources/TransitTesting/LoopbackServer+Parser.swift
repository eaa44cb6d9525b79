import Foundation

/// The HTTP/1.1 request parser of ``LoopbackServer``: pure functions over the bytes a connection
/// has buffered, so malformed input can only produce an `.invalid` result, never a crash or a
/// wait for bytes that cannot come.
enum LoopbackRequestParser {
    /// Limits that turn an endless or huge request into an error instead of unbounded memory.
    static let maxHeadBytes = 64 * 1024
    static let maxBodyBytes = 64 * 1024 * 1024
    static let maxChunkLineBytes = 4096

    /// A rejected request: the status to answer with (then the connection is closed) and why.
    struct Rejection: Error, Equatable {
        var status: Int
        var reason: String
    }

    /// How the body of a request is delimited.
    enum BodyFraming: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// The request line and header fields.
    struct Head: Equatable {
        var method: String
        var target: String
        var version: String
        var headers: [LoopbackHeader]
        var framing: BodyFraming
        /// Where the body starts in the buffer.
        var bodyStart: Int

        /// `true` if the client asked for `100 Continue` before sending its body.
        var expectsContinue: Bool {
            headers.value(for: "Expect")?.lowercased() == "100-continue"
        }

        /// `true` if the connection must be closed after the response (RFC 9112 §9.3).
        var wantsClose: Bool {
            let tokens = (headers.value(for: "Connection") ?? "").lowercased()
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if tokens.contains("close") { return true }
            if version == "HTTP/1.0" { return !tokens.contains("keep-alive") }
            return false
        }
    }

    enum Step<Value: Equatable>: Equatable {
        case incomplete
        case complete(Value)
        case invalid(Rejection)
    }

    private static let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    private static let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    private static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { tokenCharacters.contains($0) }
    }

    private static func bad(_ reason: String, status: Int = 400) -> Rejection {
        Rejection(status: status, reason: reason)
    }

    /// Parses the request line and headers at the start of `buffer`.
    static func parseHead(_ buffer: [UInt8]) -> Step<Head> {
        // Tolerate empty lines before a request (RFC 9112 §2.2).
        var start = 0
        while start + 1 < buffer.count, buffer[start] == 13, buffer[start + 1] == 10 { start += 2 }
        guard let end = firstIndex(of: crlfcrlf, in: buffer, from: start, limit: maxHeadBytes) else {
            // The verdict must not depend on how the bytes arrive: bare LF endings are looked for
            // first (a prefix that shows them gets the same answer as the whole head), and the head
            // is too large only once every place its end could start has been searched.
            if firstIndex(of: [10, 10], in: buffer, from: start, limit: maxHeadBytes) != nil {
                return .invalid(bad("request head ends with bare LF line endings; HTTP needs CRLF"))
            }
            if buffer.count - start >= maxHeadBytes + crlfcrlf.count {
                return .invalid(bad("request head larger than \(maxHeadBytes) bytes", status: 431))
            }
            return .incomplete
        }
        let lines = split(buffer[start..<end])
        guard let requestLine = lines.first else { return .invalid(bad("empty request line")) }
        for line in lines where line.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            return .invalid(bad("bare CR, LF or NUL in the request head"))
        }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, isToken(parts[0]), !parts[1].isEmpty,
              let method = String(bytes: parts[0], encoding: .ascii),
              let target = String(bytes: parts[1], encoding: .utf8),
              let version = String(bytes: parts[2], encoding: .ascii)
        else { return .invalid(bad("malformed request line")) }
        guard target.first == "/" || target == "*" || target.hasPrefix("http://") || target.hasPrefix("https://"),
              !target.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) // no whitespace or control character
        else { return .invalid(bad("malformed request target")) }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/"), version.count == 8 {
                return .invalid(bad("unsupported version \(version)", status: 505))
            }
            return .invalid(bad("malformed HTTP version"))
        }
        var headers: [LoopbackHeader] = []
        for line in lines.dropFirst() {
            if line.first == 32 || line.first == 9 { return .invalid(bad("obsolete header line folding")) }
            guard let colon = line.firstIndex(of: 58) else { return .invalid(bad("header line without a colon")) }
            let name = line[line.startIndex..<colon]
            guard isToken(name), let nameText = String(bytes: name, encoding: .ascii) else {
                return .invalid(bad("malformed header name"))
            }
            let rawValue = line[line.index(after: colon)...]
            let value = (String(bytes: rawValue, encoding: .utf8) ?? String(decoding: rawValue, as: UTF8.self))
                .trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            headers.append(LoopbackHeader(nameText, value))
        }
        switch framing(headers) {
        case .failure(let rejection):
            return .invalid(rejection)
        case .success(let framing):
            return .complete(Head(method: method, target: target, version: version, headers: headers,
                                  framing: framing, bodyStart: end + 4))
        }
    }

    private static func framing(_ headers: [LoopbackHeader]) -> Result<BodyFraming, Rejection> {
        let lengths = headers.filter { $0.name.caseInsensitiveCompare("Content-Length") == .orderedSame }
            .flatMap { $0.value.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if let encoding = headers.value(for: "Transfer-Encoding") {
            guard lengths.isEmpty else { return .failure(bad("both Transfer-Encoding and Content-Length")) }
            let codings = encoding.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard codings == ["chunked"] else {
                return .failure(bad("unsupported transfer coding \(encoding)", status: 501))
            }
            return .success(.chunked)
        }
        guard let first = lengths.first else { return .success(.none) }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return .failure(bad("invalid Content-Length"))
        }
        guard first.count <= 12, let length = Int(first) else {
            return .failure(bad("body larger than \(maxBodyBytes) bytes", status: 413))
        }
        guard length <= maxBodyBytes else { return .failure(bad("body larger than \(maxBodyBytes) bytes", status: 413)) }
        return .success(length == 0 ? .none : .length(length))
    }

    /// Parses the body that follows `head`. On success, returns the body and the index just past
    /// the request, where the next kept-alive request starts.
    static func parseBody(_ buffer: [UInt8], head: Head) -> Step<Body> {
        switch head.framing {
        case .none:
            return .complete(Body(data: Data(), end: head.bodyStart))
        case .length(let length):
            guard buffer.count - head.bodyStart >= length else { return .incomplete }
            return .complete(Body(data: Data(buffer[head.bodyStart..<head.bodyStart + length]), end: head.bodyStart + length))
        case .chunked:
            return parseChunked(buffer, from: head.bodyStart)
        }
    }

    /// A complete body and the index just past it.
    struct Body: Equatable {
        var data: Data
        var end: Int
    }

    private static func parseChunked(_ buffer: [UInt8], from start: Int) -> Step<Body> {
        var data = Data()
        var index = start
        while true {
            guard let lineEnd = firstIndex(of: [13, 10], in: buffer, from: index, limit: maxChunkLineBytes) else {
                return buffer.count - index >= maxChunkLineBytes + 2 ? .invalid(bad("chunk size line too long")) : .incomplete
            }
            let line = buffer[index..<lineEnd]
            let sizePart = line.split(separator: 59, maxSplits: 1, omittingEmptySubsequences: false)[0] // ';' starts extensions
            guard let sizeText = String(bytes: sizePart, encoding: .ascii)?.trimmingCharacters(in: CharacterSet(charactersIn: " \t")),
                  !sizeText.isEmpty, sizeText.count <= 8, let size = Int(sizeText, radix: 16), size >= 0
            else { return .invalid(bad("malformed chunk size")) }
            index = lineEnd + 2
            if size == 0 {
                // Trailer fields, then an empty line.
                while true {
                    guard let trailerEnd = firstIndex(of: [13, 10], in: buffer, from: index, limit: maxHeadBytes) else {
                        return buffer.count - index >= maxHeadBytes + 2 ? .invalid(bad("trailers too long")) : .incomplete
                    }
                    let isEmpty = trailerEnd == index
                    index = trailerEnd + 2
                    if isEmpty { return .complete(Body(data: data, end: index)) }
                }
            }
            guard data.count + size <= maxBodyBytes else {
                return .invalid(bad("body larger than \(maxBodyBytes) bytes", status: 413))
            }
            guard buffer.count >= index + size + 2 else { return .incomplete }
            guard buffer[index + size] == 13, buffer[index + size + 1] == 10 else {
                return .invalid(bad("chunk data not followed by CRLF"))
            }
            data.append(contentsOf: buffer[index..<index + size])
            index += size + 2
        }
    }

    /// The lines of a head (split on CRLF).
    private static func split(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 13, index + 1 < bytes.endIndex, bytes[index + 1] == 10 {
                lines.append(bytes[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(bytes[lineStart..<bytes.endIndex])
        return lines
    }

    /// The first index of `pattern` in `buffer` at or after `start`, looking at most `limit`
    /// bytes past `start`.
    private static func firstIndex(of pattern: [UInt8], in buffer: [UInt8], from start: Int, limit: Int) -> Int? {
        let last = min(buffer.count - pattern.count, start + limit)
        guard start <= last else { return nil }
        var index = start
        while index <= last {
            if buffer[index] == pattern[0] {
                var matches = true
                for offset in 1..<pattern.count where buffer[index + offset] != pattern[offset] {
                    matches = false
                    break
                }
                if matches { return index }
            }
            index += 1
        }
        return nil
    }
}
