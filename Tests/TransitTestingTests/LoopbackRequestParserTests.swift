import Foundation
import Testing
@testable import TransitTesting

/// The loopback server's request parser keeps its limits whatever the client sends, and reads a
/// body as it arrives rather than from its first byte on every read.
@Suite struct LoopbackRequestParserTests {
    private let chunkedHead = Array("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

    @Test func leadingEmptyLinesCountTowardTheHeadLimit() {
        // An endless stream of CRLFs must hit the 64 KiB head limit, not grow the buffer forever.
        let buffer = Array(repeating: Array("\r\n".utf8), count: 40_000).flatMap { $0 }
        guard case .invalid(let rejection) = LoopbackRequestParser.parseHead(buffer) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(rejection.status == 431)
    }

    @Test func aFewLeadingEmptyLinesAreStillTolerated() {
        let buffer = Array("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        guard case .complete(let head) = LoopbackRequestParser.parseHead(buffer) else {
            Issue.record("expected a head")
            return
        }
        #expect(head.method == "GET")
    }

    @Test func trailerLinesAreBounded() {
        // Each trailer line is short, but there is no end to them.
        var buffer = chunkedHead + Array("0\r\n".utf8)
        for index in 0..<20_000 { buffer += Array("X-Trailer-\(index): 1\r\n".utf8) }
        var reader = LoopbackRequestReader()
        guard case .invalid(let rejection) = reader.read(buffer) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(rejection.status == 431)
    }

    @Test func aBodyWithTrailersIsRead() {
        let buffer = chunkedHead + Array("3\r\nabc\r\n0\r\nX-Checksum: 1\r\n\r\n".utf8)
        var reader = LoopbackRequestReader()
        guard case .complete(let request) = reader.read(buffer) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Data("abc".utf8))
        #expect(request.end == buffer.count)
    }

    @Test func aChunkedBodyIsReadIncrementallyNotFromItsFirstByteOnEveryRead() {
        // 5 000 one-byte chunks, each arriving in a read of its own: the reader examines each byte
        // a bounded number of times, so the work is linear in the body, not quadratic.
        var buffer = chunkedHead
        var reader = LoopbackRequestReader()
        #expect(reader.read(buffer) == .incomplete)
        for _ in 0..<5_000 {
            buffer += Array("1\r\na\r\n".utf8)
            #expect(reader.read(buffer) == .incomplete)
        }
        buffer += Array("0\r\n\r\n".utf8)
        guard case .complete(let request) = reader.read(buffer) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Data(repeating: UInt8(ascii: "a"), count: 5_000))
        #expect(reader.bytesExamined <= 4 * buffer.count, "examined \(reader.bytesExamined) of \(buffer.count) bytes")
    }

    @Test func aChunkSplitAcrossReadsIsReassembled() {
        let whole = chunkedHead + Array("a\r\n0123456789\r\n5;ext=1\r\nabcde\r\n0\r\n\r\n".utf8)
        var reader = LoopbackRequestReader()
        var result = LoopbackRequestParser.Step<LoopbackRequestReader.Request>.incomplete
        for end in 1...whole.count {
            result = reader.read(Array(whole[..<end]))
            if end < whole.count { #expect(result == .incomplete, "at \(end)") }
        }
        guard case .complete(let request) = result else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Data("0123456789abcde".utf8))
    }

    @Test func aContentLengthBodyIsReadOnceComplete() {
        let whole = Array("PUT /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".utf8)
        var reader = LoopbackRequestReader()
        #expect(reader.read(Array(whole.dropLast(2))) == .incomplete)
        guard case .complete(let request) = reader.read(whole) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Data("hello".utf8))
        #expect(request.end == whole.count)
    }
}
