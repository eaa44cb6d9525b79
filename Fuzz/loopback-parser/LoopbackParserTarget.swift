// Fuzz target for the loopback server's HTTP/1.1 request parser
// (Sources/TransitTesting/Loopback/LoopbackServer+Parser.swift), driven the way a connection drives it
// (LoopbackServer+Connection.swift): bytes arrive in reads, one `LoopbackRequestReader` per request
// is asked again after each read and resumes where it stopped (the head, then the body), then a
// new reader reads the next pipelined request from what is left. Two targets share this file:
// loopback-parser fuzzes messages as they are, with a connection's limits; loopback-limits
// (Fuzz/loopback-limits) expands runs of filler so that messages reach the parser's size limits,
// which it sets small (1 KiB heads and trailer lines, 300-byte chunk-size lines, 2 KiB bodies, 4
// trailer lines) except for one input in 32 (flags bits 3-7 all set), which keeps the standard
// 64 KiB / 4 KiB / 64 MiB / 100 and costs ~50 times more.
//
// Input: a flags byte (bits 0-2: how many extra read boundaries), then two bytes per boundary (the
// top bit counts from the end of the message, the rest is the offset), then the message. In
// loopback-limits, 0xFE followed by a byte d stands for `headBytes - 256 + d` bytes of "a", and
// 0xFD d for `chunkLineBytes - 256 + d` of them (at most two such runs).
//
// Invariants:
// - the verdict (the requests parsed, then a rejection's status, a close, or waiting for more) is
//   the same whatever the segmentation: all bytes in one read, or split at the chosen points;
// - the reader's work is linear: it has examined at most the bytes buffered plus 4 per read (a
//   CRLF or CRLFCRLF may straddle two reads), never the buffer again from its start;
// - every parsed request is well formed: the method and header names are tokens, the target has
//   no whitespace or control character, no value has CR, LF or NUL, a Content-Length body has
//   that length;
// - a parsed request written back in canonical form (its headers, a Content-Length body) parses
//   to the same request.
import Foundation

private typealias Parser = LoopbackRequestParser

private struct Parsed: Equatable {
    var method: String
    var target: String
    var version: String
    var headers: [HTTPField]
    var body: Data
    var framing: Parser.BodyFraming
}

private enum End: Equatable {
    /// Rejected with this status (the reason is not compared: which check fires first may depend
    /// on how much has arrived).
    case rejected(status: Int)
    /// The last request asked to close the connection.
    case closed
    /// Waiting for more bytes, with this many buffered.
    case waiting(buffered: Int)
}

private struct Verdict: Equatable {
    var requests: [Parsed] = []
    var end: End = .waiting(buffered: 0)
    var reason: String?

    static func == (a: Verdict, b: Verdict) -> Bool { a.requests == b.requests && a.end == b.end }
}

/// Feeds `reads` to the parser as a connection does (LoopbackServer+Connection.swift): one
/// `LoopbackRequestReader` per request, asked again after every read and resuming where it
/// stopped, then a new one for what follows the request in the buffer.
private func serve(_ reads: [ArraySlice<UInt8>], limits: Parser.Limits) -> Verdict {
    var verdict = Verdict()
    var buffer: [UInt8] = []
    var reader = LoopbackRequestReader(limits: limits)
    var readsSeen = 0
    for read in reads {
        buffer.append(contentsOf: read)
        readsSeen += 1
        parsing: while true {
            let step = reader.read(buffer)
            // The reader resumes where it stopped: it examines each buffered byte about once
            // (a few bytes again per read, where a CRLF may straddle two reads), never again
            // from the start, so a request that arrives in many reads costs linear time.
            require(reader.bytesExamined <= buffer.count + 4 * readsSeen,
                    "the reader examined \(reader.bytesExamined) bytes of \(buffer.count) buffered in \(readsSeen) reads")
            switch step {
            case .incomplete: break parsing
            case .invalid(let rejection):
                verdict.end = .rejected(status: rejection.status)
                verdict.reason = rejection.reason
                return verdict
            case .complete(let request):
                let head = request.head
                verdict.requests.append(Parsed(method: head.method, target: head.target, version: head.version,
                                               headers: head.headers, body: request.body, framing: head.framing))
                require(request.end <= buffer.count && request.end > 0, "the parser consumed \(request.end) of \(buffer.count) bytes")
                buffer.removeFirst(request.end)
                reader = LoopbackRequestReader(limits: limits)
                readsSeen = 1
                if head.wantsClose {
                    verdict.end = .closed
                    return verdict
                }
            }
        }
    }
    verdict.end = .waiting(buffered: buffer.count)
    return verdict
}

/// The limits the messages are parsed with: loopback-limits uses small ones (so a message at a
/// limit costs as little as any other), except for one input in 32, which keeps a connection's
/// standard limits; loopback-parser always uses the standard ones.
private func limits(flags: UInt8) -> Parser.Limits {
    guard expandsToLimits, flags & 0xF8 != 0xF8 else { return .standard }
    return Parser.Limits(headBytes: 1024, bodyBytes: 2048, chunkLineBytes: 300, trailerLines: 4)
}

func fuzzTarget(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let flags = input.byte()
    let boundaryCodes = (0..<Int(flags & 7)).map { _ in input.uint16() }
    let limits = limits(flags: flags)
    let message = expand(input.bytes, enabled: expandsToLimits, limits: limits)

    var cuts = boundaryCodes.map { code -> Int in
        let offset = (code & 0x7FFF) % (message.count + 1)
        return code & 0x8000 != 0 ? message.count - offset : offset
    }
    cuts = Array(Set(cuts)).sorted()
    var reads: [ArraySlice<UInt8>] = []
    var start = 0
    for cut in cuts + [message.count] where cut >= start {
        reads.append(message[start..<cut])
        start = cut
    }

    let whole = serve([message[...]], limits: limits)
    let split = serve(reads, limits: limits)
    require(whole == split, """
        the verdict depends on the segmentation: reads ending at \(cuts) give \(describe(split)), \
        one read gives \(describe(whole))
        """)

    for request in whole.requests {
        checkWellFormed(request)
        checkRoundTrip(request, limits: limits)
    }
}

/// The message, with 0xFE d and 0xFD d runs expanded when `enabled`.
private func expand(_ bytes: ArraySlice<UInt8>, enabled: Bool, limits: Parser.Limits) -> [UInt8] {
    guard enabled else { return Array(bytes) }
    var out: [UInt8] = []
    var runs = 0
    var index = bytes.startIndex
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == 0xFE || byte == 0xFD, runs < 2, index + 1 < bytes.endIndex {
            let limit = byte == 0xFE ? limits.headBytes : limits.chunkLineBytes
            out.append(contentsOf: repeatElement(UInt8(ascii: "a"), count: max(0, limit - 256 + Int(bytes[index + 1]))))
            runs += 1
            index += 2
        } else {
            out.append(byte)
            index += 1
        }
    }
    return out
}

private func describe(_ verdict: Verdict) -> String {
    let requests = verdict.requests.map { "\($0.method) \($0.target) \($0.headers.count) headers \($0.body.count) body bytes" }
    return "\(requests) then \(verdict.end) \(verdict.reason ?? "")"
}

private let tokenBytes = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

private func checkWellFormed(_ request: Parsed) {
    require(!request.method.isEmpty && request.method.utf8.allSatisfy(tokenBytes.contains), "method \(request.method.debugDescription) is not a token")
    require(request.version == "HTTP/1.1" || request.version == "HTTP/1.0", "version \(request.version.debugDescription)")
    require(!request.target.isEmpty && !request.target.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }),
            "target \(request.target.debugDescription) is empty or has whitespace or a control character")
    for header in request.headers {
        require(!header.name.isEmpty && header.name.utf8.allSatisfy(tokenBytes.contains), "header name \(header.name.debugDescription) is not a token")
        require(!header.value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }), "header \(header.name) has CR, LF or NUL in its value \(header.value.debugDescription)")
    }
    if case .length(let length) = request.framing {
        require(request.body.count == length, "a Content-Length \(length) body has \(request.body.count) bytes")
    }
}

private func checkRoundTrip(_ request: Parsed, limits: Parser.Limits) {
    let framingFields = ["content-length", "transfer-encoding"]
    let kept = request.headers.filter { !framingFields.contains($0.name.lowercased()) }
    var text = "\(request.method) \(request.target) \(request.version)\r\n"
    for header in kept { text += "\(header.name): \(header.value)\r\n" }
    if !request.body.isEmpty { text += "Content-Length: \(request.body.count)\r\n" }
    text += "\r\n"
    // The canonical form can be longer (a space after each colon, U+FFFD for invalid UTF-8).
    guard text.utf8.count <= limits.headBytes else { return }
    let canonical = Array(text.utf8) + request.body
    let reparsed = serve([canonical[...]], limits: limits)
    guard let again = reparsed.requests.first else {
        fail("the request written back in canonical form does not parse: \(describe(reparsed)); canonical form \(String(decoding: canonical.prefix(300), as: UTF8.self).debugDescription)")
    }
    let againKept = again.headers.filter { !framingFields.contains($0.name.lowercased()) }
    require(again.method == request.method && again.target == request.target && again.version == request.version
                && againKept == kept && again.body == request.body,
            "the request written back in canonical form parses differently: \(describe(reparsed))")
}
