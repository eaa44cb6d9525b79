import Foundation
import Testing
@testable import Transit

/// The parser against the WHATWG HTML specification's "server-sent events" interpretation: each
/// rule, and the specification's own examples, fed whole, byte by byte and split at every point.
@Suite("Server-Sent Events parser")
struct ServerSentEventParserTests {
    /// The events `text` dispatches, fed in one chunk; the same for every other feeding is checked.
    private func events(_ text: String, lastEventID: String = "") throws -> [ServerSentEvent] {
        try events(Data(text.utf8), lastEventID: lastEventID)
    }

    /// The events `bytes` dispatch fed in one chunk, after checking that every split into two
    /// chunks and a byte-by-byte feeding dispatch the same events.
    private func events(_ bytes: Data, lastEventID: String = "") throws -> [ServerSentEvent] {
        var whole = ServerSentEventParser(lastEventID: lastEventID)
        let expected = try whole.parse(bytes)
        for split in 0...bytes.count {
            var parser = ServerSentEventParser(lastEventID: lastEventID)
            let got = try parser.parse(bytes.prefix(split)) + parser.parse(bytes.dropFirst(split))
            #expect(got == expected, "split at \(split)")
            #expect(parser.lastEventID == whole.lastEventID)
            #expect(parser.reconnectionTime == whole.reconnectionTime)
        }
        var parser = ServerSentEventParser(lastEventID: lastEventID)
        var got: [ServerSentEvent] = []
        for byte in bytes { got += try parser.parse(Data([byte])) }
        #expect(got == expected, "byte by byte")
        return expected
    }

    private func data(_ events: [ServerSentEvent]) -> [String] { events.map(\.data) }

    // MARK: The specification's examples

    @Test func theSpecificationsFirstExampleDispatchesThreeMessagesOfWhichOneHasTwoLines() throws {
        let stream = """
            data: This is the first message.

            data: This is the second message, it
            data: has two lines.

            data: This is the third message.


            """
        let got = try events(stream)
        #expect(data(got) == ["This is the first message.", "This is the second message, it\nhas two lines.", "This is the third message."])
        #expect(got.allSatisfy { $0.event == "message" && $0.id == nil && $0.retry == nil })
    }

    @Test func theSpecificationsEventTypesExampleNamesEachEvent() throws {
        let got = try events("event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n")
        #expect(got == [
            ServerSentEvent(event: "add", data: "73857293"),
            ServerSentEvent(event: "remove", data: "2153"),
            ServerSentEvent(event: "add", data: "113411"),
        ])
    }

    @Test func theSpecificationsStockExampleJoinsDataLinesWithLineFeeds() throws {
        #expect(try events("data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent(data: "YHOO\n+2\n10")])
    }

    @Test func theSpecificationsIDExampleSetsResetsAndDropsTheUnterminatedEvent() throws {
        var parser = ServerSentEventParser()
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n"
        let got = try events(stream)
        #expect(got == [ServerSentEvent(id: "1", data: "first event"), ServerSentEvent(id: nil, data: "second event")])
        _ = try parser.parse(Data(stream.utf8))
        parser.finish()
        #expect(parser.lastEventID == "")
    }

    @Test func theSpecificationsEmptyDataExampleDispatchesAnEmptyStringAndALineFeed() throws {
        #expect(data(try events("data\n\ndata\ndata\n\ndata:")) == ["", "\n"])
    }

    @Test func theSpecificationsSpaceExampleRemovesOnlyOneSpace() throws {
        #expect(data(try events("data:test\n\ndata: test\n\n")) == ["test", "test"])
        #expect(data(try events("data:  two spaces\n\ndata:\ttab\n\n")) == [" two spaces", "\ttab"])
    }

    // MARK: Line endings

    @Test func everyLineEndingEndsALine() throws {
        let expected = [ServerSentEvent(id: "7", event: "tick", data: "a\nb")]
        #expect(try events("id: 7\nevent: tick\ndata: a\ndata: b\n\n") == expected)
        #expect(try events("id: 7\r\nevent: tick\r\ndata: a\r\ndata: b\r\n\r\n") == expected)
        #expect(try events("id: 7\revent: tick\rdata: a\rdata: b\r\r") == expected)
        #expect(try events("id: 7\revent: tick\r\ndata: a\ndata: b\r\n\r") == expected)
    }

    @Test func aCarriageReturnEndingOneChunkAndALineFeedStartingTheNextAreOneLineBreak() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("data: a\r".utf8)).isEmpty)
        // Were the LF a second line break, it would be the blank line that dispatches.
        #expect(try parser.parse(Data("\ndata: b\r".utf8)).isEmpty)
        #expect(try parser.parse(Data("\n\r".utf8)) == [ServerSentEvent(data: "a\nb")])
        #expect(try parser.parse(Data("\n".utf8)).isEmpty)
    }

    @Test func twoCarriageReturnsAreTwoLineBreaks() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("data: a\r".utf8)).isEmpty)
        #expect(try parser.parse(Data("\r".utf8)) == [ServerSentEvent(data: "a")])
    }

    // MARK: UTF-8 and the byte order mark

    @Test func oneLeadingByteOrderMarkIsSkippedAndASecondIsText() throws {
        let bom = Data([0xEF, 0xBB, 0xBF])
        #expect(try events(bom + Data("data: x\n\n".utf8)) == [ServerSentEvent(data: "x")])
        // A second mark makes the first line's field name "\u{FEFF}data": an unknown field.
        #expect(try events(bom + bom + Data("data: x\n\ndata: y\n\n".utf8)) == [ServerSentEvent(data: "y")])
        // A mark later in the stream is text.
        #expect(try events(Data("data: ".utf8) + bom + Data("\n\n".utf8)) == [ServerSentEvent(data: "\u{FEFF}")])
    }

    @Test func bytesThatStartLikeAByteOrderMarkAreText() throws {
        #expect(try events(Data([0xEF, 0xBB]) + Data("\ndata: x\n\n".utf8)) == [ServerSentEvent(data: "x")])
        #expect(try events(Data([0xEF]) + Data(":comment\ndata: x\n\n".utf8)) == [ServerSentEvent(data: "x")])
    }

    @Test func invalidUTF8ReadsAsReplacementCharacters() throws {
        let bytes = Data("data: a".utf8) + Data([0xFF, 0xC3]) + Data("\ndata: ".utf8) + Data([0xE2, 0x82]) + Data("\n\n".utf8)
        #expect(try events(bytes) == [ServerSentEvent(data: "a\u{FFFD}\u{FFFD}\n\u{FFFD}")])
        #expect(try events("data: é€😀\n\n") == [ServerSentEvent(data: "é€😀")])
    }

    // MARK: Fields

    @Test func aCommentLineIsIgnored() throws {
        #expect(try events(":\n: keep-alive\n:data: x\n\n").isEmpty)
        #expect(try events("data: a\n: between\ndata: b\n\n") == [ServerSentEvent(data: "a\nb")])
    }

    @Test func aLineWithoutAColonIsAFieldWithAnEmptyValue() throws {
        #expect(try events("data\n\n") == [ServerSentEvent(data: "")])
        #expect(try events("event\ndata: x\n\n") == [ServerSentEvent(event: "message", data: "x")])
        #expect(try events("id: 3\ndata: a\n\nid\ndata: b\n\n") == [ServerSentEvent(id: "3", data: "a"), ServerSentEvent(id: nil, data: "b")])
    }

    @Test func theValueIsEverythingAfterTheFirstColon() throws {
        #expect(try events("data: a: b:c\n\n") == [ServerSentEvent(data: "a: b:c")])
    }

    @Test func fieldNamesAreCaseSensitiveAndUnknownOnesAreIgnored() throws {
        #expect(try events("Data: x\nDATA: y\n\n").isEmpty)
        #expect(try events("foo: bar\ndata : x\ndata: y\n\n") == [ServerSentEvent(data: "y")])
    }

    @Test func theEventTypeDefaultsToMessageAndIsResetAfterEachEvent() throws {
        #expect(try events("event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n").map(\.event) == ["a", "message", "message"])
    }

    @Test func anEventTypeWithoutDataIsDroppedAtTheBlankLine() throws {
        #expect(try events("event: a\n\ndata: 1\n\n") == [ServerSentEvent(data: "1")])
    }

    @Test func anIDContainingNULIsIgnored() throws {
        let bytes = Data("id: 1\ndata: a\n\nid: 2".utf8) + Data([0]) + Data("x\ndata: b\n\n".utf8)
        #expect(try events(bytes) == [ServerSentEvent(id: "1", data: "a"), ServerSentEvent(id: "1", data: "b")])
    }

    @Test func theLastEventIDPersistsAcrossEventsAndIsTakenAtTheBlankLineEvenWithoutData() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("id: 5\ndata: a\n\ndata: b\n\n".utf8)).map(\.id) == ["5", "5"])
        #expect(try parser.parse(Data("id: 6\n".utf8)).isEmpty)
        #expect(parser.lastEventID == "5")  // not yet: only a blank line takes it
        #expect(try parser.parse(Data("\n".utf8)).isEmpty)
        #expect(parser.lastEventID == "6")
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(id: "6", data: "c")])
    }

    @Test func anIDInAnUnterminatedEventIsNotTakenAtTheEndOfTheStream() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("id: 1\ndata: a\n\nid: 2\ndata: b\n".utf8))
        parser.finish()
        #expect(parser.lastEventID == "1")
        // Nor on the next body: its events without an ID carry the last one taken.
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(id: "1", data: "c")])
    }

    @Test func aReconnectionsParserStartsFromTheLastEventID() throws {
        #expect(try events("data: a\n\n", lastEventID: "41") == [ServerSentEvent(id: "41", data: "a")])
        #expect(try events("id\ndata: a\n\n", lastEventID: "41") == [ServerSentEvent(id: nil, data: "a")])
    }

    @Test func retryOfASCIIDigitsOnlySetsTheReconnectionTime() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("retry: 2500\n".utf8))
        #expect(parser.reconnectionTime == .milliseconds(2500))
        // Not digits only: ignored, the last value stays.
        for ignored in ["retry: 1.5\n", "retry: -1\n", "retry: 12a\n", "retry:  7\n", "retry: ٣\n", "retry:\n", "retry\n", "retry: +3\n"] {
            _ = try parser.parse(Data(ignored.utf8))
            #expect(parser.reconnectionTime == .milliseconds(2500), "\(ignored.debugDescription)")
        }
        _ = try parser.parse(Data("retry: 0\n".utf8))
        #expect(parser.reconnectionTime == .zero)
    }

    @Test func retryTakesEffectAtItsLineAndEventsCarryIt() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("retry: 10\ndata: a\n".utf8))
        #expect(parser.reconnectionTime == .milliseconds(10))
        parser.finish()  // the event is discarded, the reconnection time stays
        #expect(parser.reconnectionTime == .milliseconds(10))
        #expect(try parser.parse(Data("data: b\n\n".utf8)) == [ServerSentEvent(data: "b", retry: .milliseconds(10))])
    }

    @Test func aRetryTooLargeToCountSaturates() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("retry: 99999999999999999999999999999\n".utf8))
        #expect(parser.reconnectionTime == .milliseconds(Int64.max))
    }

    // MARK: Dispatch and the end of the stream

    @Test func anEventIsDispatchedOnlyAtABlankLine() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("data: a\n".utf8)).isEmpty)
        #expect(try parser.parse(Data("data: b\n".utf8)).isEmpty)
        #expect(try parser.parse(Data("\n".utf8)) == [ServerSentEvent(data: "a\nb")])
    }

    @Test func anUnterminatedEventAtTheEndOfTheStreamIsDiscarded() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("data: a\n\ndata: b\n".utf8)) == [ServerSentEvent(data: "a")])
        parser.finish()
        // The next body starts clean: "b" is gone, and a line cut at the end is gone too.
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(data: "c")])
        _ = try parser.parse(Data("data: d".utf8))
        parser.finish()
        #expect(try parser.parse(Data("\n".utf8)).isEmpty)
    }

    @Test func finishingStartsTheNextBodyWithItsOwnByteOrderMark() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data([0xEF, 0xBB, 0xBF]) + Data("data: a\n\n".utf8))
        parser.finish()
        #expect(try parser.parse(Data([0xEF, 0xBB, 0xBF]) + Data("data: b\n\n".utf8)) == [ServerSentEvent(data: "b")])
    }

    // MARK: Limits

    @Test func aLineAtTheLimitIsReadAndOneByteMoreFails() throws {
        var parser = ServerSentEventParser(maxLineBytes: 10)
        #expect(try parser.parse(Data("data: 1234\n\n".utf8)) == [ServerSentEvent(data: "1234")])
        #expect(throws: ServerSentEventError.lineTooLong(limit: 10)) { try parser.parse(Data("data: 12345\n".utf8)) }
    }

    @Test func anUnterminatedLineFailsAsSoonAsItPassesTheLimitWithoutWaitingForItsEnd() throws {
        var parser = ServerSentEventParser(maxLineBytes: 1024)
        #expect(try parser.parse(Data(repeating: 0x61, count: 1000)).isEmpty)
        #expect(throws: ServerSentEventError.lineTooLong(limit: 1024)) { try parser.parse(Data(repeating: 0x61, count: 100)) }
        var whole = ServerSentEventParser(maxLineBytes: 1024)
        #expect(throws: ServerSentEventError.lineTooLong(limit: 1024)) { try whole.parse(Data(repeating: 0x61, count: 1025)) }
    }

    @Test func aCommentCountsTowardsTheLineLimit() throws {
        var parser = ServerSentEventParser(maxLineBytes: 8)
        #expect(throws: ServerSentEventError.lineTooLong(limit: 8)) { try parser.parse(Data(":123456789\n".utf8)) }
    }

    @Test func anEventsDataAtTheLimitIsDispatchedAndOneByteMoreFails() throws {
        var parser = ServerSentEventParser(maxEventBytes: 7)
        // "abc\ndef" is 7 bytes: the joining line feed counts, the final one does not.
        #expect(try parser.parse(Data("data: abc\ndata: def\n\n".utf8)) == [ServerSentEvent(data: "abc\ndef")])
        #expect(throws: ServerSentEventError.eventTooLarge(limit: 7)) { try parser.parse(Data("data: abc\ndata: defg\n".utf8)) }
    }

    @Test func manyShortDataLinesFailAtTheEventLimit() throws {
        var parser = ServerSentEventParser(maxEventBytes: 1000)
        let line = Data("data: x\n".utf8)
        #expect(throws: ServerSentEventError.eventTooLarge(limit: 1000)) {
            for _ in 0..<10_000 { _ = try parser.parse(line) }
        }
    }

    @Test func theErrorsSayWhatWentWrongAndWhatToDo() {
        #expect(ServerSentEventError.lineTooLong(limit: 1024).description.contains("1024 bytes"))
        #expect(ServerSentEventError.lineTooLong(limit: 1024).localizedDescription.contains("maxLineBytes"))
        #expect(ServerSentEventError.eventTooLarge(limit: 9).description.contains("maxEventBytes"))
        #expect(ServerSentEventError.notAnEventStream(contentType: "text/html").description.contains("\"text/html\""))
        #expect(ServerSentEventError.notAnEventStream(contentType: nil).description.contains("missing"))
        #expect(ServerSentEventError.unexpectedStatus(202).description.contains("202"))
    }
}
