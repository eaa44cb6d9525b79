// Fuzz target for `URLEncodedForm` (Sources/Transit/Requests/URLEncodedForm.swift), the
// application/x-www-form-urlencoded writer and reader. The input is used twice: as a body to read,
// and, split at 0xFF bytes (which UTF-8 never contains), as alternating names and values to write.
//
// Invariants:
// - reading never fails, and what it reads written back reads the same (the written form is
//   canonical: reading and writing again changes nothing);
// - any fields written read back as the same fields, in order: `URLEncodedForm(parsing:
//   form.encodedString) == form`, as its documentation promises;
// - the written form has only letters, digits, `*-._`, `+`, `%XX`, `=` and `&`, and one `&`-piece
//   per field.
import Foundation

private let kept = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789*-._+%=&".utf8)

func fuzzTarget(_ bytes: [UInt8]) {
    let read = URLEncodedForm(parsing: Data(bytes))
    let rewritten = read.encodedString
    let reread = URLEncodedForm(parsing: rewritten)
    require(reread.fields == read.fields, "the fields read from the input, written as \(rewritten.debugDescription), read back differently")
    require(reread.encodedString == rewritten, "writing the form read back changed it")

    let strings = bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    var form = URLEncodedForm()
    var index = 0
    while index < strings.count {
        form.fields.append(.init(name: strings[index], value: index + 1 < strings.count ? strings[index + 1] : ""))
        index += 2
    }
    let written = form.encodedString
    require(written.utf8.allSatisfy(kept.contains), "the written form \(written.debugDescription) has a character that is not encoded")
    let pieces = written.split(separator: "&", omittingEmptySubsequences: false)
    require(form.fields.isEmpty ? written.isEmpty : pieces.count == form.fields.count,
            "\(form.fields.count) fields were written as \(pieces.count) pieces: \(written.debugDescription)")
    let back = URLEncodedForm(parsing: written)
    require(back == form || (back.fields.isEmpty && form.fields.allSatisfy { $0.name.isEmpty && $0.value.isEmpty }),
            "the fields \(form.fields) were written as \(written.debugDescription) and read back as \(back.fields)")
}
