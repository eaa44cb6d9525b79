import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import Transit
import TransitTesting

/// A folder of its own under the system's temporary folder; `remove()` deletes it.
struct ScratchFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("transit-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `data` to a file called `name` in the folder.
    func file(_ name: String, _ data: Data) throws -> URL {
        let file = url.appendingPathComponent(name)
        try data.write(to: file)
        return file
    }

    /// The names of the files in the folder.
    var contents: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// `count` deterministic pseudo-random bytes.
func pseudoRandomBytes(_ count: Int, seed: UInt64) -> Data {
    var generator = SeededGenerator(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBufferPointer { buffer in
        var index = 0
        while index < count {
            var word = generator.next()
            for _ in 0..<min(8, count - index) {
                buffer[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
    }
    return Data(bytes)
}

/// Every block `form` writes with `blockSize`.
func blocks(of form: MultipartFormData, blockSize: Int) throws -> [Data] {
    var blocks: [Data] = []
    try form.write(blockSize: blockSize) { blocks.append($0) }
    return blocks
}

@Suite("multipart/form-data: building and encoding")
struct MultipartFormDataTests {
    // MARK: exact bytes

    @Test func aSmallBodyHasExactlyTheseBytes() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = try MultipartFormData(boundary: "XyZ")
        form.append("Ann", name: "user")
        form.append(Data([0x00, 0xFF]), name: "blob", filename: "b.bin")
        form.append("{}", name: "meta", contentType: "application/json")
        form.append(fileAt: try folder.file("hello.txt", Data("hi\r\n".utf8)), name: "doc", contentType: "text/plain")
        var expected = Data()
        expected += Data("--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nAnn\r\n".utf8)
        expected += Data("--XyZ\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"b.bin\"\r\n".utf8)
        expected += Data("Content-Type: application/octet-stream\r\n\r\n".utf8) + Data([0x00, 0xFF]) + Data("\r\n".utf8)
        expected += Data("--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{}\r\n".utf8)
        expected += Data("--XyZ\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"hello.txt\"\r\n".utf8)
        expected += Data("Content-Type: text/plain\r\n\r\nhi\r\n\r\n--XyZ--\r\n".utf8)

        #expect(try blocks(of: form, blockSize: 1 << 20).reduce(Data(), +) == expected)
        let body = folder.url.appendingPathComponent("body")
        #expect(try form.writeBody(to: body) == Int64(expected.count))
        #expect(try Data(contentsOf: body) == expected)
        #expect(form.contentType == "multipart/form-data; boundary=XyZ")
        #expect(form.containsFiles)
        #expect(form.inMemoryLength == nil)
    }

    @Test func anEmptyFormIsTheClosingDelimiter() throws {
        let form = try MultipartFormData(boundary: "b")
        #expect(try form.encodedData() == Data("--b--\r\n".utf8))
        #expect(form.inMemoryLength == 7)
    }

    @Test func theInMemoryLengthIsTheEncodedLength() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<200 {
            var form = MultipartFormData()
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                let name = randomString(&generator)
                switch Int.random(in: 0...2, using: &generator) {
                case 0: form.append(randomString(&generator), name: name)
                case 1: form.append(Data(randomString(&generator).utf8), name: name, filename: randomString(&generator))
                default: form.append(Data(randomString(&generator).utf8), name: name, contentType: "text/plain; charset=utf-8")
                }
            }
            #expect(form.inMemoryLength == (try form.encodedData().count))
        }
    }

    // MARK: escaping

    @Test func namesAreNewlineNormalisedThenQuotesAndLineBreaksPercentEscaped() throws {
        var form = try MultipartFormData(boundary: "Q9")
        form.append("v", name: "a\"b\r\nc\rd\ne")
        let text = String(decoding: try form.encodedData(), as: UTF8.self)
        #expect(text.contains("Content-Disposition: form-data; name=\"a%22b%0D%0Ac%0D%0Ad%0D%0Ae\"\r\n"))
    }

    @Test func filenamesArePercentEscapedWithoutNormalisation() throws {
        var form = try MultipartFormData(boundary: "b")
        form.append(Data(), name: "f", filename: "x\"y\rz\n.txt")
        let text = String(decoding: try form.encodedData(), as: UTF8.self)
        #expect(text.contains("; filename=\"x%22y%0Dz%0A.txt\"\r\n"))
    }

    @Test func otherCharactersInNamesAreSentAsUTF8Unchanged() throws {
        var form = try MultipartFormData(boundary: "b")
        form.append("v", name: "prénom; x=1 \\ %41", contentType: nil)
        let body = try form.encodedData()
        #expect(body.range(of: Data("name=\"prénom; x=1 \\ %41\"\r\n".utf8)) != nil)
    }

    @Test func valuesAreSentByteForByte() throws {
        var form = try MultipartFormData(boundary: "Q9")
        form.append("line\nbreak\r\"quoted\"", name: "v")
        let parts = try MultipartFormDataParser.parse(try form.encodedData(), boundary: "Q9")
        #expect(parts.first?.body == Data("line\nbreak\r\"quoted\"".utf8))
    }

    // MARK: the boundary

    @Test func aRandomBoundaryIsTransitAnd32LettersOrDigits() {
        let boundaries = (0..<50).map { _ in MultipartFormData().boundary }
        for boundary in boundaries {
            #expect(boundary.hasPrefix("transit-"))
            #expect(boundary.utf8.count == 40)
            #expect(boundary.dropFirst(8).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        }
        #expect(Set(boundaries).count == boundaries.count)
        let form = MultipartFormData()
        #expect(form.contentType == "multipart/form-data; boundary=\(form.boundary)")
    }

    @Test func aRandomBoundaryFoundInAPartIsReplaced() throws {
        var form = MultipartFormData()
        let first = form.boundary
        form.append(Data("before --\(first) after".utf8), name: "data")
        #expect(form.boundary != first)
        let second = form.boundary
        form.append("v", name: "name \(second)")
        #expect(form.boundary != second)
        let third = form.boundary
        form.append(Data(), name: "f", filename: "\(third).txt")
        #expect(form.boundary != third)
        let body = try form.encodedData()
        let parts = try MultipartFormDataParser.parse(body, contentType: form.contentType)
        #expect(parts.map(\.name) == ["data", "name \(second)", "f"])
        #expect(parts.first?.body == Data("before --\(first) after".utf8))
    }

    @Test func aBoundaryInAFilePartsNameIsReplacedToo() throws {
        var form = MultipartFormData()
        let first = form.boundary
        form.append(fileAt: URL(fileURLWithPath: "/nonexistent/\(first)"), name: "file")
        #expect(form.boundary != first)
    }

    @Test func aChosenBoundaryMustBeShortAndNeedNoQuoting() {
        for bad in ["", String(repeating: "a", count: 71), "a b", "a;b", "a\"b", "a/b", "é", "a\r\nb", "a=b"] {
            #expect(throws: MultipartFormDataError.invalidBoundary(bad)) { try MultipartFormData(boundary: bad) }
        }
        for good in [String(repeating: "a", count: 70), "'+-._", "Az09"] {
            #expect(throws: Never.self) { try MultipartFormData(boundary: good) }
        }
    }

    @Test func aChosenBoundaryFoundInAPartFailsEncoding() throws {
        var form = try MultipartFormData(boundary: "sep")
        form.append("ok", name: "a")
        form.append("has sep inside", name: "b")
        #expect(form.boundary == "sep")
        #expect(throws: MultipartFormDataError.boundaryInPart(partName: "b")) { try form.encodedData() }
        var named = try MultipartFormData(boundary: "sep")
        named.append("v", name: "the-sep-field")
        #expect(throws: MultipartFormDataError.boundaryInPart(partName: "the-sep-field")) { try named.encodedData() }
    }

    // MARK: what cannot be encoded

    @Test func aContentTypeWithALineBreakOrEmptyFailsEncoding() throws {
        var form = MultipartFormData()
        form.append(Data(), name: "x", contentType: "text/plain\r\nX-Injected: 1")
        #expect(throws: MultipartFormDataError.invalidContentType(partName: "x")) { try form.encodedData() }
        var empty = MultipartFormData()
        empty.append("v", name: "y", contentType: "")
        #expect(throws: MultipartFormDataError.invalidContentType(partName: "y")) { try empty.encodedData() }
    }

    @Test func encodedDataRefusesFileParts() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = MultipartFormData()
        form.append(fileAt: try folder.file("a", Data("a".utf8)), name: "a")
        #expect(throws: MultipartFormDataError.containsFiles) { try form.encodedData() }
    }

    @Test func aMissingFileIsNamedInTheErrorAndNothingIsWritten() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let missing = folder.url.appendingPathComponent("missing.bin")
        var form = MultipartFormData()
        form.append("first", name: "title")
        form.append(fileAt: missing, name: "upload")
        var written = 0
        let error = try #require(throws: MultipartFormDataError.self) { try form.write { written += $0.count } }
        guard case .unreadableFile(let url, let partName, let reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(url == missing)
        #expect(partName == "upload")
        #expect(reason.contains("No such file"))
        #expect(error.description.contains(missing.path))
        #expect(written == 0)
        let body = folder.url.appendingPathComponent("body")
        #expect(throws: MultipartFormDataError.self) { try form.writeBody(to: body) }
        #expect(!FileManager.default.fileExists(atPath: body.path))
    }

    @Test func aDirectoryIsNotAFile() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = MultipartFormData()
        form.append(fileAt: folder.url, name: "dir")
        #expect(throws: MultipartFormDataError.unreadableFile(folder.url, partName: "dir", reason: "it is a directory")) {
            try form.write { _ in }
        }
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let fifo = folder.url.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        var form = MultipartFormData()
        form.append(fileAt: fifo, name: "pipe")
        // Opening a FIFO for reading would block until a writer came; it must not.
        #expect(throws: MultipartFormDataError.unreadableFile(fifo, partName: "pipe", reason: "it is not a regular file")) {
            try form.write { _ in }
        }
    }

    @Test(.enabled(if: getuid() != 0, "root reads files whatever their permissions"))
    func aFileWithoutReadPermissionIsNamedInTheError() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let locked = try folder.file("locked", Data("secret".utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: locked.path)
        var form = MultipartFormData()
        form.append(fileAt: locked, name: "locked")
        let error = try #require(throws: MultipartFormDataError.self) { try form.write { _ in } }
        #expect(error == .unreadableFile(locked, partName: "locked", reason: "Permission denied"))
    }

    @Test func aBodyThatCannotBeWrittenFailsWithItsPath() throws {
        let target = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/body")
        var form = MultipartFormData()
        form.append("v", name: "n")
        #expect(throws: MultipartFormDataError.cannotWriteBody(target, reason: "No such file or directory")) {
            try form.writeBody(to: target)
        }
    }

    // MARK: streaming in blocks

    @Test func aFileIsStreamedInBlocksOfExactlyTheBlockSize() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        // Large blocks over a 1 MiB file, tiny ones (headers split across blocks) over a small one.
        for (blockSize, fileSize) in [(4096, (1 << 20) + 3), (65_536, (1 << 20) + 3), (7, 5003), (1, 2001)] {
            let payload = pseudoRandomBytes(fileSize, seed: UInt64(blockSize))
            var form = try MultipartFormData(boundary: "blocks")
            form.append("title", name: "t")
            form.append(fileAt: try folder.file("big-\(blockSize).bin", payload), name: "big", contentType: "application/octet-stream")
            form.append(Data(repeating: 0x41, count: 1000), name: "tail")
            let written = try blocks(of: form, blockSize: blockSize)
            #expect(written.dropLast().allSatisfy { $0.count == blockSize })
            #expect((1...blockSize).contains(written.last?.count ?? 0))
            let body = written.reduce(into: Data()) { $0 += $1 }
            let parts = try MultipartFormDataParser.parse(body, boundary: "blocks")
            #expect(parts.map(\.name) == ["t", "big", "tail"])
            #expect(parts[1].body == payload)
            #expect(parts[1].filename == "big-\(blockSize).bin")
            #expect(parts[2].body == Data(repeating: 0x41, count: 1000))
        }
        #expect(MultipartFormData.defaultBlockSize == 65_536)
    }

    @Test func aBlockSizeBelowOneCountsAsOne() throws {
        var form = try MultipartFormData(boundary: "b")
        form.append("xy", name: "n")
        let written = try blocks(of: form, blockSize: 0)
        #expect(written.allSatisfy { $0.count == 1 })
        #expect(written.reduce(Data(), +) == (try form.encodedData()))
    }

    @Test func anErrorFromTheSinkStopsTheWriting() throws {
        struct Full: Error {}
        var form = try MultipartFormData(boundary: "b")
        form.append(Data(repeating: 1, count: 100), name: "n")
        var calls = 0
        #expect(throws: Full.self) {
            try form.write(blockSize: 10) { _ in
                calls += 1
                if calls == 3 { throw Full() }
            }
        }
        #expect(calls == 3)
    }

    // MARK: round trip through the parser

    @Test func everyFormReadsBackThroughTheParser() throws {
        // Names and filenames without `%` (whose escapes are not reversible, as in browsers).
        let pool = trickyScalars.filter { $0 != "%" }
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<500 {
            var form = MultipartFormData()
            var expected: [(name: String, filename: String?, body: Data, type: String?)] = []
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                let name = randomString(&generator, pool: pool)
                let body = Data(randomString(&generator, maxLength: 40).utf8) + pseudoRandomBytes(Int.random(in: 0...64, using: &generator), seed: generator.next())
                if Bool.random(using: &generator) {
                    let filename = randomString(&generator, pool: pool)
                    form.append(body, name: name, filename: filename, contentType: "image/png")
                    expected.append((name, filename, body, "image/png"))
                } else {
                    form.append(body, name: name)
                    expected.append((name, nil, body, nil))
                }
            }
            let parts = try MultipartFormDataParser.parse(try form.encodedData(), contentType: form.contentType)
            #expect(parts.count == expected.count)
            for (part, wanted) in zip(parts, expected) {
                #expect(part.name == normalisingNewlines(wanted.name))
                #expect(part.filename == wanted.filename)
                #expect(part.body == wanted.body)
                #expect(part.contentType == wanted.type)
            }
        }
    }

    @Test func percentEscapesInNamesAreNotReversibleAsInBrowsers() throws {
        var form = try MultipartFormData(boundary: "b")
        form.append("v", name: "literal %22")
        let parts = try MultipartFormDataParser.parse(try form.encodedData(), boundary: "b")
        #expect(parts.first?.rawName == "literal %22")
        #expect(parts.first?.name == "literal \"")
    }

    /// Bare CR, bare LF and CR LF, all as CR LF.
    private func normalisingNewlines(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n", previousWasCR {
                previousWasCR = false
                continue
            }
            previousWasCR = scalar == "\r"
            if scalar == "\r" || scalar == "\n" {
                scalars.append(contentsOf: "\r\n".unicodeScalars)
            } else {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}
