// Fuzz target for MultipartFormDataParser (Sources/TransitTesting/Loopback/MultipartFormDataParser.swift),
// the test kit's reader of multipart/form-data bodies. The first byte picks a mode (its value
// modulo 3); the rest, split at 0xFF bytes, is that mode's fields.
//
// 0, round trip: a boundary, a preamble, an epilogue, then groups of name, filename, content
//    type (empty for none) and content, one group per part, written by the library's writer
//    (MultipartFormData). The body parses back, with its boundary and with the writer's
//    Content-Type, to exactly those parts in order: the name and filename as the writer escaped
//    them (rawName, rawFilename: the WHATWG escaping, written out here) and, unless the text
//    holds a literal %0D, %0A or %22 (which the escaping cannot tell apart), as given (line
//    breaks in a name normalised to CR LF); the content type without the OWS around it; the
//    content byte for byte; no other header. The same body with the preamble, the epilogue and
//    transport padding (SP/HT, from the mode byte's high bits) after every delimiter reads the
//    same, so long as the preamble has no line starting with --boundary.
// 1, agreement: a boundary, then any body. The parser's verdict and parts are those of the
//    RFC 2046 reader below (readRFC2046: the grammar of RFC 2046 §5.1.1 on bytes, with header
//    lines split at the first colon, no header-name check, OWS trimmed — the reading the parser
//    documents), with the typed error that names the same fault. Where they may differ, and only
//    there (marked D1-D3 below):
//    D1 after the close delimiter the RFC allows only transport padding and CR LF before the
//       epilogue; the parser ignores everything after `--boundary--` (documented). The parts
//       must still be the same.
//    D2 RFC 2046 lets a part be header lines without the blank line and content (body-part :=
//       MIME-part-headers [CRLF *OCTET]); the parser documents the blank line as required and
//       throws unterminatedHeaders for the first such part, which must be that part.
//    D3 a header line that starts with SP or HT is RFC 5322 folding (or not a header at all);
//       the parser does not unfold. The reader refuses such a head and nothing is compared.
//    Also: when the multipart target's strict reader (Fuzz/multipart/MultipartReader.swift:
//    exactly the writer's layout, no preamble, padding or epilogue) reads the body and every
//    part starts with a header line (not CR LF), the parser reads the same contents. A
//    preamble (a line before the first delimiter) and an epilogue added to an accepted body
//    change no part.
// 2, Content-Type: four bytes that seed the choices, a boundary (its bytes mapped to RFC 2046
//    bchars; the same bytes are also the raw Content-Type below), then a body. The boundary
//    written in Content-Types of every shape the flags pick — quoted (with or without needless
//    quoted-pairs, RFC 9110 §5.6.4) or unquoted (when it is a token), the parameter in any case
//    and among others (charset, quoted values holding `;boundary=` or an escaped quote or
//    backslash, names that end or start with "boundary") in any order, OWS around `;` — is
//    found unchanged, and parse(_:contentType:) reads as parse(_:boundary:) with it. The raw
//    field as a Content-Type either yields noBoundary or reads as parse(_:boundary:) with the
//    boundary found, and where it is an RFC 9110 media type (readMediaType below), that
//    boundary is the `boundary` parameter it names (nil for an empty one or a type other than
//    multipart).
//
// Every mode: no input traps; parse returns or throws a ParseError (the typed throws).
import Foundation

private typealias Parser = MultipartFormDataParser
private let fallbackBoundary = "fuzz-boundary"
private let crlf: [UInt8] = [13, 10]

func fuzzTarget(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    let rest = Array(bytes.dropFirst())
    switch mode % 3 {
    case 0: roundTrip(rest, padding: padding(from: mode))
    case 1: agreement(rest)
    default: contentTypes(rest)
    }
}

/// 0 to 3 SP/HT bytes from the mode byte's high bits.
private func padding(from mode: UInt8) -> [UInt8] {
    let count = Int(mode >> 6)
    return (0..<count).map { ((mode >> (2 + $0)) & 1) == 0 ? 0x20 : 0x09 }
}

private func parse(_ body: [UInt8], boundary: String) -> Result<[Parser.Part], Parser.ParseError> {
    Result { () throws(Parser.ParseError) in try Parser.parse(Data(body), boundary: boundary) }
}

private func parse(_ body: [UInt8], contentType: String) -> Result<[Parser.Part], Parser.ParseError> {
    Result { () throws(Parser.ParseError) in try Parser.parse(Data(body), contentType: contentType) }
}

private func describe(_ result: Result<[Parser.Part], Parser.ParseError>) -> String {
    switch result {
    case .success(let parts): "\(parts.count) parts \(parts.map { "[\($0.headers) \(String(decoding: $0.body, as: UTF8.self).debugDescription)]" })"
    case .failure(let error): "\(error)"
    }
}

// MARK: - 0: round trip through the library's writer

private func roundTrip(_ input: [UInt8], padding: [UInt8]) {
    let fields = input.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
    func field(_ index: Int) -> [UInt8] { index < fields.count ? fields[index] : [] }
    var form: MultipartFormData
    do {
        form = try MultipartFormData(boundary: String(decoding: field(0), as: UTF8.self))
    } catch {
        form = try! MultipartFormData(boundary: fallbackBoundary)
    }
    let preamble = field(1), epilogue = field(2)
    var expected: [(name: String, filename: String?, contentType: String?, content: [UInt8])] = []
    var index = 3
    while index < fields.count {
        let name = String(decoding: field(index), as: UTF8.self)
        let filename = field(index + 1).isEmpty ? nil : String(decoding: field(index + 1), as: UTF8.self)
        let contentType = field(index + 2).isEmpty ? nil : String(decoding: field(index + 2), as: UTF8.self)
        let content = field(index + 3)
        form.append(Data(content), name: name, filename: filename, contentType: contentType)
        expected.append((name, filename, contentType ?? (filename == nil ? nil : MultipartFormData.defaultFileContentType), content))
        index += 4
    }
    guard let body = try? form.encodedData() else { return } // the multipart target checks the writer

    func check(_ result: Result<[Parser.Part], Parser.ParseError>, _ how: String) {
        guard case .success(let parts) = result else {
            fail("the writer's body does not parse \(how): \(describe(result)); body \(String(decoding: body.prefix(400), as: UTF8.self).debugDescription)")
        }
        require(parts.count == expected.count, "\(expected.count) parts written, \(parts.count) parsed \(how)")
        for (part, want) in zip(parts, expected) {
            require(Array(part.body) == want.content, "part \(want.name.debugDescription): other content \(how)")
            require(part.headers.count == (want.contentType == nil ? 1 : 2), "part \(want.name.debugDescription): headers \(part.headers) \(how)")
            require(part.rawName.map { Array($0.utf8) } == escape(want.name, normalisingLineBreaks: true),
                    "part \(want.name.debugDescription): rawName \(part.rawName.debugDescription) \(how)")
            require(part.rawFilename.map { Array($0.utf8) } == want.filename.map { escape($0, normalisingLineBreaks: false) },
                    "part \(want.name.debugDescription): rawFilename \(part.rawFilename.debugDescription), written \(want.filename.debugDescription) \(how)")
            if !hasEscapeLookalike(want.name) {
                require(part.name.map { Array($0.utf8) } == normaliseLineBreaks(Array(want.name.utf8)),
                        "part \(want.name.debugDescription) reads back as the name \(part.name.debugDescription) \(how)")
            }
            if let filename = want.filename, !hasEscapeLookalike(filename) {
                require(part.filename.map { Array($0.utf8) } == Array(filename.utf8),
                        "part \(want.name.debugDescription): filename \(filename.debugDescription) reads back as \(part.filename.debugDescription) \(how)")
            }
            if want.filename == nil { require(part.filename == nil, "part \(want.name.debugDescription) has a filename \(how)") }
            let type = want.contentType.map { trimOWS(Array($0.utf8)) }
            require(part.contentType.map { Array($0.utf8) } == type,
                    "part \(want.name.debugDescription): content type \(part.contentType.debugDescription), written \(want.contentType.debugDescription) \(how)")
        }
    }
    let bytes = Array(body)
    check(parse(bytes, boundary: form.boundary), "with its boundary")
    check(parse(bytes, contentType: form.contentType), "with its Content-Type \(form.contentType.debugDescription)")

    // The same parts with a preamble, padding after every delimiter and an epilogue, when the
    // preamble has no line that starts with the delimiter (RFC 2046: the first such line is the
    // first delimiter).
    let dash = Array("--\(form.boundary)".utf8)
    var decorated = preamble.isEmpty ? [] : preamble + crlf
    guard preamble.isEmpty || (!(decorated + dash).starts(with: dash) && findBytes(crlf + dash, in: decorated + dash, from: 0) == preamble.count)
    else { return }
    for part in form.parts {
        guard case .data(let data) = part.content else { return }
        decorated += dash + padding + crlf + Array(part.head) + Array(data) + crlf
    }
    decorated += dash + [45, 45] + padding + crlf + epilogue
    check(parse(decorated, boundary: form.boundary),
          "after a preamble of \(preamble.count) bytes, with \(padding.count) bytes of padding and an epilogue of \(epilogue.count) bytes")
}

/// The WHATWG escaping of a name (line breaks first normalised to CR LF) or a filename: CR →
/// `%0D`, LF → `%0A`, `"` → `%22`.
private func escape(_ text: String, normalisingLineBreaks: Bool) -> [UInt8] {
    let bytes = normalisingLineBreaks ? normaliseLineBreaks(Array(text.utf8)) : Array(text.utf8)
    return bytes.flatMap { byte -> [UInt8] in
        switch byte {
        case 13: Array("%0D".utf8)
        case 10: Array("%0A".utf8)
        case 0x22: Array("%22".utf8)
        default: [byte]
        }
    }
}

/// CR LF, a lone CR and a lone LF each become CR LF.
private func normaliseLineBreaks(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        if bytes[index] == 13 || bytes[index] == 10 {
            out += crlf
            if bytes[index] == 13, index + 1 < bytes.count, bytes[index + 1] == 10 { index += 1 }
        } else {
            out.append(bytes[index])
        }
        index += 1
    }
    return out
}

/// `true` if the text holds `%0D`, `%0A` or `%22`, which read back as CR, LF and `"`.
private func hasEscapeLookalike(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return ["%0D", "%0A", "%22"].contains { findBytes(Array($0.utf8), in: bytes, from: 0) != nil }
}

private func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

private func trimOWS(_ bytes: some Collection<UInt8>) -> [UInt8] {
    Array(bytes.drop(while: isOWS).reversed().drop(while: isOWS).reversed())
}

// MARK: - 1: agreement with an RFC 2046 reader

private func agreement(_ input: [UInt8]) {
    let split = input.firstIndex(of: 0xFF) ?? input.count
    let boundary = String(decoding: input[..<split], as: UTF8.self)
    let body = Array(input[min(split + 1, input.count)...])
    let parsed = parse(body, boundary: boundary)
    let reading = readRFC2046(body, boundary: Array(boundary.utf8))
    let context = "boundary \(boundary.debugDescription), body \(String(decoding: body, as: UTF8.self).debugDescription): the parser says \(describe(parsed)), the RFC 2046 reader \(reading)"

    switch reading {
    case .parts(let before, _) where before.contains(where: \.headersOnly),
         .refused(_, let before) where before.contains(where: \.headersOnly):
        // D2: the parser requires the blank line after a part's headers, and stops there.
        let first = before.firstIndex(where: \.headersOnly)!
        require(parsed == .failure(.unterminatedHeaders(partIndex: first)), "D2: \(context)")
    case .parts(let expected, _):
        do {
            // Both accept (D1: whatever follows the close delimiter): the same parts.
            guard case .success(let parts) = parsed else { fail("the parser refuses a body RFC 2046 reads: \(context)") }
            require(parts.count == expected.count, "other parts: \(context)")
            for (part, want) in zip(parts, expected) {
                require(Array(part.body) == want.content, "other content: \(context)")
                require(part.headers.map { Array($0.name.utf8) } == want.headers.map { Array(String(decoding: $0.name, as: UTF8.self).utf8) }
                            && part.headers.map { Array($0.value.utf8) } == want.headers.map { Array(String(decoding: $0.value, as: UTF8.self).utf8) },
                        "other header fields: \(context)")
                _ = (part.name, part.filename, part.contentType) // no trap in the accessors
            }
        }
    case .refused(.headerLineStartsWithWhitespace, _):
        break // D3: the parser does not unfold; nothing to compare.
    case .refused(let reason, _):
        let error: Parser.ParseError = switch reason {
        case .noOpeningDelimiter: .noOpeningDelimiter
        case .malformedDelimiterLine(let index): .malformedDelimiterLine(partIndex: index)
        case .missingClosingDelimiter: .missingClosingDelimiter
        case .unterminatedHeaders(let index): .unterminatedHeaders(partIndex: index)
        case .malformedHeaderLine(let index): .malformedHeaderLine(partIndex: index)
        case .headerLineStartsWithWhitespace: fatalError("handled above")
        }
        require(parsed == .failure(error), "other verdict: \(context)")
    }

    // The multipart target's strict reader (the writer's exact layout): same contents.
    // It looks for the blank line even in a part that starts with CR LF (no header: the writer
    // never sends one), so it is compared only where every part starts with a header line.
    if let strict = readMultipart(body, boundary: boundary), strict.allSatisfy({ !$0.head.isEmpty && !$0.head.starts(with: crlf) }),
       case .parts(let expected, _) = reading {
        require(strict.map(\.content) == expected.map(\.content), "the two readers disagree: \(context), strict \(strict.map(\.content))")
    }

    // Metamorphic: a preamble and an epilogue change nothing.
    guard case .success(let parts) = parsed else { return }
    require(parse(body + Array("\r\nepilogue --\(boundary)\r\n".utf8), boundary: boundary) == parsed, "an epilogue changed the parts: \(context)")
    if body.starts(with: Array("--\(boundary)".utf8)) {
        let withPreamble = parse(Array("preamble\r\n".utf8) + body, boundary: boundary)
        require(withPreamble == .success(parts), "a preamble changed the verdict to \(describe(withPreamble)): \(context)")
    }
}

/// One part as RFC 2046 reads it.
private struct ReadPart: CustomStringConvertible {
    var headers: [(name: [UInt8], value: [UInt8])]
    var content: [UInt8]
    /// Header lines and no blank line: valid RFC 2046, refused by the parser (D2).
    var headersOnly = false

    var description: String {
        "[\(headers.map { "\(String(decoding: $0.name, as: UTF8.self)): \(String(decoding: $0.value, as: UTF8.self))" }) \(String(decoding: content, as: UTF8.self).debugDescription)\(headersOnly ? " headers only" : "")]"
    }
}

private enum Refusal: Error, Equatable {
    case noOpeningDelimiter
    case malformedDelimiterLine(Int)
    case missingClosingDelimiter
    case unterminatedHeaders(Int)
    case malformedHeaderLine(Int)
    case headerLineStartsWithWhitespace(Int)
}

private enum Reading: CustomStringConvertible {
    /// `cleanEnd`: the close delimiter is followed by padding and CR LF or the end (D1 if not).
    case parts([ReadPart], cleanEnd: Bool)
    /// `before`: the parts read before the refusal.
    case refused(Refusal, before: [ReadPart])

    var description: String {
        switch self {
        case .parts(let parts, let clean): "\(parts.count) parts \(parts)\(clean ? "" : " (junk after the close delimiter)")"
        case .refused(let refusal, let before): "refuses: \(refusal) after \(before)"
        }
    }
}

/// RFC 2046 §5.1.1, on bytes:
///
///     multipart-body := [preamble CRLF] dash-boundary transport-padding CRLF body-part
///                       *encapsulation close-delimiter transport-padding [CRLF epilogue]
///     encapsulation  := delimiter transport-padding CRLF body-part
///     delimiter      := CRLF dash-boundary;  close-delimiter := delimiter "--"
///     body-part      := MIME-part-headers [CRLF *OCTET]
///
/// A line that begins with the dash-boundary is a delimiter line (the note to implementors: the
/// boundary need not be the whole line), so the first one ends the preamble and each later one
/// ends a part; anything after the boundary but padding then CR LF, or `--`, is malformed. No
/// part, `--boundary--` alone, is accepted too (what the writer sends for an empty form). A
/// delimiter line that the body cuts off (fewer than two bytes after the padding) is a missing
/// close delimiter. A part's header section ends at its first blank line; each header line is a
/// name up to the first colon (OWS after it trimmed, not empty) and a value (OWS trimmed).
private func readRFC2046(_ body: [UInt8], boundary: [UInt8]) -> Reading {
    guard !boundary.isEmpty else { return .refused(.noOpeningDelimiter, before: []) }
    let dash: [UInt8] = [45, 45] + boundary
    func startsWith(_ pattern: [UInt8], at index: Int) -> Bool {
        index + pattern.count <= body.count && body[index..<index + pattern.count].elementsEqual(pattern)
    }
    // The first line (lines end at CR LF) that starts with the dash-boundary.
    var line = 0
    while !startsWith(dash, at: line) {
        guard let end = findBytes(crlf, in: body, from: line) else { return .refused(.noOpeningDelimiter, before: []) }
        line = end + 2
    }
    var position = line + dash.count
    var parts: [ReadPart] = []
    while true {
        if startsWith([45, 45], at: position) {
            var index = position + 2
            while index < body.count, isOWS(body[index]) { index += 1 }
            return .parts(parts, cleanEnd: index == body.count || startsWith(crlf, at: index))
        }
        while position < body.count, isOWS(body[position]) { position += 1 }
        guard body.count - position >= 2 else { return .refused(.missingClosingDelimiter, before: parts) }
        guard startsWith(crlf, at: position) else { return .refused(.malformedDelimiterLine(parts.count), before: parts) }
        let start = position + 2
        // The part runs to the next line that starts with the dash-boundary; the CR LF before
        // that line belongs to the delimiter.
        guard let end = findBytes(crlf + dash, in: body, from: start) else { return .refused(.missingClosingDelimiter, before: parts) }
        switch readPart(Array(body[start..<end]), index: parts.count) {
        case .success(let part): parts.append(part)
        case .failure(let refusal): return .refused(refusal, before: parts)
        }
        position = end + 2 + dash.count
    }
}

private func readPart(_ bytes: [UInt8], index: Int) -> Result<ReadPart, Refusal> {
    // No header fields: the part is empty, or CR LF and the content.
    if bytes.isEmpty { return .success(ReadPart(headers: [], content: [])) }
    if bytes.starts(with: crlf) { return .success(ReadPart(headers: [], content: Array(bytes.dropFirst(2)))) }
    let section: [UInt8]
    var part = ReadPart(headers: [], content: [])
    if let blank = findBytes(crlf + crlf, in: bytes, from: 0) {
        section = Array(bytes[..<blank])
        part.content = Array(bytes[(blank + 4)...])
    } else if bytes.count >= 2, bytes.suffix(2).elementsEqual(crlf) {
        section = Array(bytes.dropLast(2)) // header lines only: RFC 2046 allows it (D2)
        part.headersOnly = true
    } else {
        return .failure(.unterminatedHeaders(index))
    }
    var lines: [[UInt8]] = []
    var lineStart = 0
    while let end = findBytes(crlf, in: section, from: lineStart) {
        lines.append(Array(section[lineStart..<end]))
        lineStart = end + 2
    }
    lines.append(Array(section[lineStart...]))
    for line in lines {
        let refusal: Refusal
        if let first = line.first, isOWS(first) {
            refusal = .headerLineStartsWithWhitespace(index)
        } else if let colon = line.firstIndex(of: 0x3A), !trimOWS(line[..<colon]).isEmpty {
            part.headers.append((trimOWS(line[..<colon]), trimOWS(line[(colon + 1)...])))
            continue
        } else {
            refusal = .malformedHeaderLine(index)
        }
        // Without the blank line the parser sees no end of the head at all.
        return .failure(part.headersOnly ? .unterminatedHeaders(index) : refusal)
    }
    return .success(part)
}

// MARK: - 2: the boundary in Content-Types of every shape

/// RFC 2046 bchars (the space is not the last).
private let bchars = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)
/// RFC 9110 tchars among them: a boundary of these may go unquoted.
private let tokenChars = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'+_-.".utf8)

private func contentTypes(_ input: [UInt8]) {
    var reader = FuzzInput(input)
    // The choices: a xorshift generator seeded with four bytes of the input.
    var state = UInt32(reader.uint16() << 16 | reader.uint16()) | 1
    func take(_ count: Int) -> Int {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return Int(state % UInt32(count))
    }
    let rest = Array(reader.bytes)
    let split = rest.firstIndex(of: 0xFF) ?? rest.count
    let raw = Array(rest[..<split])
    let body = Array(rest[min(split + 1, rest.count)...])

    var boundaryBytes = Array(raw.prefix(70).map { bchars[Int($0) % bchars.count] })
    while boundaryBytes.last == 0x20 { boundaryBytes.removeLast() }
    if boundaryBytes.isEmpty { boundaryBytes = Array("b".utf8) }
    let boundary = String(decoding: boundaryBytes, as: UTF8.self)
    let isToken = boundaryBytes.allSatisfy(tokenChars.contains)

    let types = ["multipart/form-data", "MULTIPART/FORM-DATA", "Multipart/Form-Data", "multipart/mixed", " multipart/related", "multipart/x-fuzz"]
    let keys = ["boundary", "BOUNDARY", "Boundary", "bOuNdArY"]
    let separators = [";", "; ", " ;", " ; ", ";\t", "\t;  "]
    let others = ["charset=utf-8", "charset=\"UTF-8\"", "name=\"x;boundary=evil\"", "xboundary=evil", "boundaryx=evil",
                  #"title="a\";boundary=evil""#, #"path="C:\\""#, #"q="\b\o\u\n\d""#,
                  "a=\"boundary=evil\"", "start=\"<root@fuzz>\"", "type=\"text/plain\"", "empty=\"\""]
    for variant in 0..<4 {
        let quoted = !isToken || take(2) == 1
        // Quoted, each scalar perhaps as a quoted-pair (`\x` stands for `x`).
        let written = quoted ? "\"" + boundary.unicodeScalars.map { take(4) == 0 ? "\\\($0)" : "\($0)" }.joined() + "\"" : boundary
        var parameters = ["\(keys[take(keys.count)])=\(written)"]
        for _ in 0..<take(4) {
            parameters.insert(others[take(others.count)], at: take(parameters.count + 1))
        }
        let contentType = types[take(types.count)] + parameters.map { separators[take(separators.count)] + $0 }.joined()
        let found = Parser.boundary(fromContentType: contentType)
        require(found == boundary, "Content-Type \(contentType.debugDescription): boundary \(found.debugDescription), not \(boundary.debugDescription)")
        if variant == 0 {
            require(parse(body, contentType: contentType) == parse(body, boundary: boundary),
                    "parse(contentType: \(contentType.debugDescription)) differs from parse(boundary:)")
        }
    }

    // The raw bytes as a Content-Type: noBoundary, or the boundary it names.
    let rawType = String(decoding: raw, as: UTF8.self)
    let result = parse(body, contentType: rawType)
    if let found = Parser.boundary(fromContentType: rawType) {
        require(!found.isEmpty && result == parse(body, boundary: found), "Content-Type \(rawType.debugDescription): boundary \(found.debugDescription) reads otherwise")
    } else {
        require(result == .failure(.noBoundary(contentType: rawType)), "Content-Type \(rawType.debugDescription) has no boundary but parse says \(describe(result))")
    }
    // Where the raw text is a media type as RFC 9110 writes it, the boundary is the one it names.
    if let media = readMediaType(Array(rawType.utf8)) {
        let named = media.type == Array("multipart".utf8) ? media.parameters.first { $0.name == Array("boundary".utf8) }?.value : nil
        let expected = named.flatMap { $0.isEmpty ? nil : String(decoding: $0, as: UTF8.self) }
        require(Parser.boundary(fromContentType: rawType) == expected,
                "Content-Type \(rawType.debugDescription): boundary \(Parser.boundary(fromContentType: rawType).debugDescription), RFC 9110 reads \(expected.debugDescription)")
    }
}

/// RFC 9110 §8.3.1 and §5.6, on bytes: `type "/" subtype *( OWS ";" OWS [ name "=" value ] )`,
/// a value a token or a quoted string (qdtext, quoted-pairs). The type and names are lowercased
/// (ASCII); nil when the text is not of that form.
private func readMediaType(_ text: [UInt8]) -> (type: [UInt8], parameters: [(name: [UInt8], value: [UInt8])])? {
    let tchars = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    var index = 0
    func token() -> [UInt8]? {
        let start = index
        while index < text.count, tchars.contains(text[index]) { index += 1 }
        return index > start ? text[start..<index].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 } : nil
    }
    func tokenValue() -> [UInt8]? {
        let start = index
        while index < text.count, tchars.contains(text[index]) { index += 1 }
        return index > start ? Array(text[start..<index]) : nil
    }
    func skipOWS() { while index < text.count, isOWS(text[index]) { index += 1 } }
    guard let type = token(), index < text.count, text[index] == 0x2F else { return nil }
    index += 1
    guard token() != nil else { return nil }
    var parameters: [(name: [UInt8], value: [UInt8])] = []
    while index < text.count {
        skipOWS()
        guard index < text.count, text[index] == 0x3B else { return nil }
        index += 1
        skipOWS()
        guard index < text.count, text[index] != 0x3B else { continue } // an empty parameter
        guard let name = token(), index < text.count, text[index] == 0x3D else { return nil }
        index += 1
        if index < text.count, text[index] == 0x22 {
            index += 1
            var value: [UInt8] = []
            while true {
                guard index < text.count else { return nil }
                let byte = text[index]
                if byte == 0x22 { index += 1; break }
                if byte == 0x5C {
                    guard index + 1 < text.count, text[index + 1] == 0x09 || text[index + 1] >= 0x20 && text[index + 1] != 0x7F else { return nil }
                    value.append(text[index + 1])
                    index += 2
                } else {
                    guard byte == 0x09 || byte >= 0x20 && byte != 0x7F else { return nil }
                    value.append(byte)
                    index += 1
                }
            }
            parameters.append((name, value))
        } else {
            guard let value = tokenValue() else { return nil }
            parameters.append((name, value))
        }
    }
    return (type, parameters)
}
