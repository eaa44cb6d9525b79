// The RFC 2046 reader of the multipart fuzz target, in a file of its own so that the
// multipart-parser target (which checks MultipartFormDataParser against it) compiles it too.
// Independent of the library: it shares no code with MultipartFormData or the parser.

/// The parts (head, content) of a multipart body as RFC 2046 reads it, or nil if it is not one:
/// `--boundary` CRLF, then parts separated by CRLF `--boundary` CRLF, then CRLF `--boundary--` CRLF.
func readMultipart(_ body: [UInt8], boundary: String) -> [(head: [UInt8], content: [UInt8])]? {
    let delimiter = Array("--\(boundary)".utf8)
    let separator: [UInt8] = [13, 10] + delimiter
    guard body.starts(with: delimiter) else { return nil }
    var position = delimiter.count
    if body[position...].starts(with: [45, 45, 13, 10]) { return position + 4 == body.count ? [] : nil }
    guard body[position...].starts(with: [13, 10]) else { return nil }
    position += 2
    var parts: [(head: [UInt8], content: [UInt8])] = []
    while true {
        guard let next = findBytes(separator, in: body, from: position) else { return nil }
        let part = Array(body[position..<next])
        guard let headEnd = findBytes([13, 10, 13, 10], in: part, from: 0) else { return nil }
        parts.append((Array(part[..<headEnd]), Array(part[(headEnd + 4)...])))
        position = next + separator.count
        if body[position...].starts(with: [45, 45, 13, 10]) { return position + 4 == body.count ? parts : nil }
        guard body[position...].starts(with: [13, 10]) else { return nil }
        position += 2
    }
}

func findBytes(_ pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
    guard pattern.count <= bytes.count else { return nil }
    var index = start
    while index + pattern.count <= bytes.count {
        if bytes[index] == pattern[0], bytes[index..<index + pattern.count].elementsEqual(pattern) { return index }
        index += 1
    }
    return nil
}
