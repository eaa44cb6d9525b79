import Foundation
import Transit

/// The HTTP/1.1 request parser of ``LoopbackServer``: pure functions over the bytes a connection
/// has buffered, so malformed input can only produce an `.invalid` result, never a crash or a
/// wait for bytes that cannot come.
enum LoopbackRequestParser {
    /// Limits that turn an endless or huge request into an error instead of unbounded memory.
    static let maxHeadBytes = 64 * 1024
    static let maxBodyBytes = 128 * 1024 * 1024
    static let maxChunkLineBytes = 4096
    /// Trailer fields after a chunked body: at most this many lines, each of at most
    /// ``maxHeadBytes`` bytes.
    static let maxTrailerLines = 100

    /// The size limits a parse enforces. A connection uses ``standard`` (the values above); the
    /// fuzz target `loopback-limits` parses with small ones, so that every message it tries
    /// reaches a limit cheaply (the code at a limit is the same whatever its value).
    struct Limits: Equatable, Sendable {
        /// The request line and header fields, with any empty lines before them.
        var headBytes = LoopbackRequestParser.maxHeadBytes
        /// A body, declared or chunked.
        var bodyBytes = LoopbackRequestParser.maxBodyBytes
        /// A chunk-size line, extensions included.
        var chunkLineBytes = LoopbackRequestParser.maxChunkLineBytes
        /// Trailer lines after a chunked body, each of at most `headBytes`.
        var trailerLines = LoopbackRequestParser.maxTrailerLines

        static let standard = Limits()
    }

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
        var headers: [HTTPField]
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

    static func bad(_ reason: String, status: Int = 400) -> Rejection {
        Rejection(status: status, reason: reason)
    }

    /// Parses the request line and headers at the start of `buffer`.
    static func parseHead(_ buffer: [UInt8], limits: Limits = .standard) -> Step<Head> {
        var scan = HeadScan()
        return parseHead(buffer, scan: &scan, limits: limits)
    }

    /// Where the search for the end of a head resumes, so bytes already searched are not
    /// searched again on the next read.
    struct HeadScan {
        /// Where the request line starts, past the empty lines before it.
        var start = 0
        /// The leading empty lines have all been skipped.
        var startFound = false
        /// Where the next search for the empty line ending the head begins.
        var searchFrom = 0
        /// Bytes examined so far.
        var examined = 0
    }

    /// Parses the head at the start of `buffer`, resuming the search where `scan` left it.
    /// Empty lines before the request line (tolerated, RFC 9112 §2.2) count toward the head limit.
    static func parseHead(_ buffer: [UInt8], scan: inout HeadScan, limits: Limits = .standard) -> Step<Head> {
        let maxHeadBytes = limits.headBytes
        if !scan.startFound {
            while scan.start + 1 < buffer.count, buffer[scan.start] == 13, buffer[scan.start + 1] == 10 {
                scan.start += 2
                guard scan.start <= maxHeadBytes else {
                    return .invalid(bad("request head larger than \(maxHeadBytes) bytes", status: 431))
                }
            }
            scan.examined += scan.start - scan.searchFrom
            // More empty lines may follow until a byte that is not CR has arrived.
            guard scan.start < buffer.count, buffer[scan.start] != 13 || scan.start + 1 < buffer.count else {
                scan.searchFrom = scan.start
                return .incomplete
            }
            scan.startFound = true
            scan.searchFrom = scan.start
        }
        let start = scan.start
        let limit = maxHeadBytes - start
        let from = max(start, scan.searchFrom)
        guard let end = firstIndex(of: crlfcrlf, in: buffer, from: from, limit: start + limit - from) else {
            scan.examined += buffer.count - from
            // The pattern may straddle what has arrived and what has not.
            scan.searchFrom = max(start, buffer.count - (crlfcrlf.count - 1))
            // The verdict must not depend on how the bytes arrive: bare LF endings are looked for
            // first (a prefix that shows them gets the same answer as the whole head), and the head
            // is too large only once every place its end could start (up to `maxHeadBytes`,
            // leading empty lines included) has been searched.
            let lineFeedsFrom = max(start, from - 1)
            if firstIndex(of: [10, 10], in: buffer, from: lineFeedsFrom, limit: maxHeadBytes - lineFeedsFrom) != nil {
                return .invalid(bad("request head ends with bare LF line endings; HTTP needs CRLF"))
            }
            if buffer.count >= maxHeadBytes + crlfcrlf.count {
                return .invalid(bad("request head larger than \(maxHeadBytes) bytes", status: 431))
            }
            return .incomplete
        }
        scan.examined += end + crlfcrlf.count - from
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
        var headers: [HTTPField] = []
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
            headers.append(HTTPField(name: nameText, value: value))
        }
        switch framing(headers, maxBodyBytes: limits.bodyBytes) {
        case .failure(let rejection):
            return .invalid(rejection)
        case .success(let framing):
            return .complete(Head(method: method, target: target, version: version, headers: headers,
                                  framing: framing, bodyStart: end + 4))
        }
    }

    private static func framing(_ headers: [HTTPField], maxBodyBytes: Int) -> Result<BodyFraming, Rejection> {
        let lengths = headers.filter { HTTPSyntax.sameFieldName($0.name, "Content-Length") }
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

    /// A complete body and the index just past it.
    struct Body: Equatable {
        var data: Data
        var end: Int
    }

    /// Parses the body that follows `head` in `buffer`, from its first byte. (A connection reads
    /// with a ``LoopbackRequestReader``, which resumes where it stopped instead.)
    static func parseBody(_ buffer: [UInt8], head: Head, limits: Limits = .standard) -> Step<Body> {
        var reader = LoopbackRequestReader(head: head, limits: limits)
        switch reader.read(buffer) {
        case .incomplete: return .incomplete
        case .invalid(let rejection): return .invalid(rejection)
        case .complete(let request): return .complete(Body(data: request.body, end: request.end))
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
    static func firstIndex(of pattern: [UInt8], in buffer: [UInt8], from start: Int, limit: Int) -> Int? {
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


/// Reads one request from a connection's buffer as its bytes arrive: the head, then the body.
///
/// Every call resumes where the previous one stopped (the search for the end of the head, the
/// chunk being read), so a request that arrives in many small reads costs time linear in its
/// size, not quadratic.
struct LoopbackRequestReader {
    /// A complete request: its head, its body, and the index just past it in the buffer.
    struct Request: Equatable {
        var head: LoopbackRequestParser.Head
        var body: Data
        var end: Int
    }

    typealias Parser = LoopbackRequestParser

    private var headScan = Parser.HeadScan()
    private var head: Parser.Head?
    /// The body read so far (chunked) and where the next chunk-size line or trailer starts.
    private var body = Data()
    private var index = 0
    /// Where the search for the CRLF ending the current line resumes.
    private var lineSearchFrom = 0
    private var inTrailers = false
    private var trailerLines = 0
    private var chunkExamined = 0
    private let limits: Parser.Limits

    /// A reader that enforces `limits` (a connection's are the standard ones).
    init(limits: Parser.Limits = .standard) {
        self.limits = limits
    }

    /// A reader whose head was read already: it reads the body that follows.
    init(head: Parser.Head, limits: Parser.Limits = .standard) {
        self.limits = limits
        self.head = head
        index = head.bodyStart
        lineSearchFrom = index
    }

    /// How many buffered bytes the reader has examined so far, over every call: searched for a
    /// line end, or copied into the body.
    var bytesExamined: Int { headScan.examined + chunkExamined }

    /// The head, once it has been read.
    var parsedHead: Parser.Head? { head }

    /// Reads what `buffer` holds so far. `buffer` must start with the request and only grow
    /// between calls.
    mutating func read(_ buffer: [UInt8]) -> Parser.Step<Request> {
        if head == nil {
            switch Parser.parseHead(buffer, scan: &headScan, limits: limits) {
            case .incomplete: return .incomplete
            case .invalid(let rejection): return .invalid(rejection)
            case .complete(let parsed):
                head = parsed
                index = parsed.bodyStart
                lineSearchFrom = index
            }
        }
        guard let head else { return .incomplete }
        switch head.framing {
        case .none:
            return .complete(Request(head: head, body: Data(), end: head.bodyStart))
        case .length(let length):
            guard buffer.count - head.bodyStart >= length else { return .incomplete }
            chunkExamined += length
            let data = Data(buffer[head.bodyStart..<head.bodyStart + length])
            return .complete(Request(head: head, body: data, end: head.bodyStart + length))
        case .chunked:
            return readChunks(buffer, head: head)
        }
    }

    /// The end of the line that starts at `index`, searching only bytes not searched before.
    private mutating func lineEnd(in buffer: [UInt8], limit: Int) -> Int? {
        let from = max(index, lineSearchFrom)
        let end = Parser.firstIndex(of: [13, 10], in: buffer, from: from, limit: index + limit - from)
        chunkExamined += (end.map { $0 + 2 } ?? buffer.count) - from
        lineSearchFrom = end.map { $0 + 2 } ?? max(index, buffer.count - 1)
        return end
    }

    private mutating func readChunks(_ buffer: [UInt8], head: Parser.Head) -> Parser.Step<Request> {
        while true {
            if inTrailers {
                // Trailer fields, then an empty line.
                guard let end = lineEnd(in: buffer, limit: limits.headBytes) else {
                    // Too long only once every place the line's end could start has arrived.
                    if buffer.count - index >= limits.headBytes + 2 {
                        return .invalid(Parser.bad("trailer line longer than \(limits.headBytes) bytes", status: 431))
                    }
                    return .incomplete
                }
                let isEmpty = end == index
                index = end + 2
                if isEmpty { return .complete(Request(head: head, body: body, end: index)) }
                trailerLines += 1
                guard trailerLines <= limits.trailerLines else {
                    return .invalid(Parser.bad("more than \(limits.trailerLines) trailer lines", status: 431))
                }
                continue
            }
            guard let lineEnd = lineEnd(in: buffer, limit: limits.chunkLineBytes) else {
                if buffer.count - index >= limits.chunkLineBytes + 2 {
                    return .invalid(Parser.bad("chunk size line too long"))
                }
                return .incomplete
            }
            let line = buffer[index..<lineEnd]
            let sizePart = line.split(separator: 59, maxSplits: 1, omittingEmptySubsequences: false)[0]  // ';' starts extensions
            guard let sizeText = String(bytes: sizePart, encoding: .ascii)?
                .trimmingCharacters(in: CharacterSet(charactersIn: " \t")),
                !sizeText.isEmpty, sizeText.count <= 8, let size = Int(sizeText, radix: 16), size >= 0
            else { return .invalid(Parser.bad("malformed chunk size")) }
            if size == 0 {
                index = lineEnd + 2
                lineSearchFrom = index
                inTrailers = true
                continue
            }
            guard body.count + size <= limits.bodyBytes else {
                return .invalid(Parser.bad("body larger than \(limits.bodyBytes) bytes", status: 413))
            }
            let dataStart = lineEnd + 2
            // Wait for the whole chunk and its CRLF; the size line is searched again only from
            // where the last search stopped.
            guard buffer.count >= dataStart + size + 2 else {
                lineSearchFrom = lineEnd
                return .incomplete
            }
            guard buffer[dataStart + size] == 13, buffer[dataStart + size + 1] == 10 else {
                return .invalid(Parser.bad("chunk data not followed by CRLF"))
            }
            body.append(contentsOf: buffer[dataStart..<dataStart + size])
            chunkExamined += size
            index = dataStart + size + 2
            lineSearchFrom = index
        }
    }
}
