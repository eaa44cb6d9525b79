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

    @Test func smallLimitsAreEnforcedLikeTheStandardOnes() {
        // The limits are a parameter (the fuzz target loopback-limits parses with small ones): a
        // reader given small limits accepts a request right at each limit and refuses one a byte
        // over it, with the status a connection answers the standard limits with.
        let limits = LoopbackRequestParser.Limits(headBytes: 64, bodyBytes: 8, chunkLineBytes: 6, trailerLines: 1)
        func read(_ text: String) -> LoopbackRequestParser.Step<LoopbackRequestReader.Request> {
            var reader = LoopbackRequestReader(limits: limits)
            return reader.read(Array(text.utf8))
        }
        func status(_ step: LoopbackRequestParser.Step<LoopbackRequestReader.Request>) -> Int? {
            if case .invalid(let rejection) = step { return rejection.status }
            return nil
        }
        func isComplete(_ step: LoopbackRequestParser.Step<LoopbackRequestReader.Request>) -> Bool {
            if case .complete = step { return true }
            return false
        }
        // A head of exactly 64 bytes before its final CRLFCRLF, then one of 65.
        let line = "GET / HTTP/1.1\r\nX: "
        let atLimit = line + String(repeating: "a", count: 64 - line.utf8.count) + "\r\n\r\n"
        let overLimit = line + String(repeating: "a", count: 65 - line.utf8.count) + "\r\n\r\n"
        #expect(isComplete(read(atLimit)))
        #expect(status(read(overLimit)) == 431)
        // The body: 8 bytes declared, then 9; 8 bytes in chunks, then 9.
        #expect(isComplete(read("PUT / HTTP/1.1\r\nContent-Length: 8\r\n\r\n12345678")))
        #expect(status(read("PUT / HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789")) == 413)
        let chunked = "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(isComplete(read(chunked + "4\r\n1234\r\n4\r\n5678\r\n0\r\n\r\n")))
        #expect(status(read(chunked + "4\r\n1234\r\n5\r\n56789\r\n0\r\n\r\n")) == 413)
        // A chunk-size line of 6 bytes (extensions included), then 7.
        #expect(isComplete(read(chunked + "1;e=xy\r\na\r\n0\r\n\r\n")))
        #expect(status(read(chunked + "1;e=xyz\r\na\r\n0\r\n\r\n")) == 400)
        // One trailer line, then two.
        #expect(isComplete(read(chunked + "0\r\nA: 1\r\n\r\n")))
        #expect(status(read(chunked + "0\r\nA: 1\r\nB: 2\r\n\r\n")) == 431)
        // The standard limits are the ones a connection uses.
        #expect(LoopbackRequestParser.Limits.standard.headBytes == LoopbackRequestParser.maxHeadBytes)
        #expect(LoopbackRequestParser.Limits.standard.chunkLineBytes == LoopbackRequestParser.maxChunkLineBytes)
    }
}
