// Fuzz target for the multipart/form-data writer (Sources/Transit/Requests/MultipartFormData.swift
// and MultipartEncoding.swift). The input, split at 0xFF bytes, is a boundary, then groups of
// name, filename, content type (empty for none) and content, one group per part.
//
// Invariants:
// - writing fails only with a MultipartFormDataError (a boundary that is invalid or occurs in a
//   part, a content type that cannot be sent);
// - a written body round-trips: read back by an RFC 2046 reader written here, it has exactly the
//   parts appended, each with exactly its content, byte for byte, and a head of exactly its
//   Content-Disposition line (name and filename quoted, with no raw quote, CR or LF) and its
//   Content-Type line, so no name, filename or type can add a header or a part;
// - streaming in blocks of any size writes the same bytes.
//
// The RFC 2046 reader is in MultipartReader.swift (shared with the multipart-parser target).
import Foundation

private let fallbackBoundary = "fuzz-boundary"

func fuzzTarget(_ bytes: [UInt8]) {
    guard let blockByte = bytes.first else { return }
    let fields = bytes.dropFirst().split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
    let boundaryText = String(decoding: fields.first ?? [], as: UTF8.self)
    var form: MultipartFormData
    do {
        form = try MultipartFormData(boundary: boundaryText)
    } catch {
        form = try! MultipartFormData(boundary: fallbackBoundary)
    }
    var expected: [(name: String, filename: String?, contentType: String?, content: [UInt8])] = []
    var index = 1
    while index < fields.count {
        func field(_ offset: Int) -> [UInt8] { index + offset < fields.count ? fields[index + offset] : [] }
        let name = String(decoding: field(0), as: UTF8.self)
        let filename = field(1).isEmpty ? nil : String(decoding: field(1), as: UTF8.self)
        let contentType = field(2).isEmpty ? nil : String(decoding: field(2), as: UTF8.self)
        let content = field(3)
        form.append(Data(content), name: name, filename: filename, contentType: contentType)
        expected.append((name, filename, contentType ?? (filename == nil ? nil : MultipartFormData.defaultFileContentType), content))
        index += 4
    }

    let body: Data
    do {
        body = try form.encodedData()
    } catch is MultipartFormDataError {
        return
    } catch {
        fail("writing threw \(error), not a MultipartFormDataError")
    }

    var streamed = Data()
    do {
        try form.write(blockSize: Int(blockByte) + 1) { block in
            require(block.count == Int(blockByte) + 1 || streamed.count + block.count == body.count, "a block of \(block.count) bytes, not \(Int(blockByte) + 1)")
            streamed.append(block)
        }
    } catch {
        fail("streaming threw \(error) where writing in memory did not")
    }
    require(streamed == body, "streaming in blocks of \(Int(blockByte) + 1) bytes wrote other bytes")
    if let length = form.inMemoryLength {
        require(length == body.count, "inMemoryLength \(length) but the body has \(body.count) bytes")
    }

    guard let parts = readMultipart(Array(body), boundary: form.boundary) else {
        fail("the body does not read as multipart with its boundary \(form.boundary.debugDescription): \(String(decoding: body.prefix(400), as: UTF8.self).debugDescription)")
    }
    require(parts.count == expected.count, "\(expected.count) parts were written, \(parts.count) read back")
    for (part, want) in zip(parts, expected) {
        require(part.content == want.content, "part \(want.name.debugDescription) reads back with other content")
        let lines = part.head.split(separator: [13, 10], omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        require(lines.count == (want.contentType == nil ? 1 : 2), "part \(want.name.debugDescription) has the head lines \(lines)")
        // Compared as bytes, not as Strings: a name that begins with a combining mark joins the
        // opening quote into one Character, so String.hasPrefix and split(separator: "\"") would
        // see no quote where the wire has one.
        let disposition = Array(lines[0].utf8)
        let prefix = Array("Content-Disposition: form-data; name=\"".utf8)
        require(disposition.starts(with: prefix), "the head line \(lines[0].debugDescription)")
        // name="…" and, for a file, ; filename="…": the quoted texts have no quote inside.
        let quoted = disposition.dropFirst(prefix.count)
        let pieces = quoted.split(separator: 0x22, omittingEmptySubsequences: false)
        require(pieces.count == (want.filename == nil ? 2 : 4) && pieces.last?.isEmpty == true
                    && (want.filename == nil || Array(pieces[1]) == Array("; filename=".utf8)),
                "the Content-Disposition line \(lines[0].debugDescription) does not quote the name and filename")
        if let type = want.contentType {
            require(lines[1] == "Content-Type: \(type)", "the head line \(lines[1].debugDescription) is not the content type \(type.debugDescription)")
        }
    }
}
