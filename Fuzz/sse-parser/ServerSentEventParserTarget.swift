// Fuzz target for `ServerSentEventParser` (Sources/Transit/Streaming/ServerSentEventParser.swift),
// the reader of `text/event-stream` bodies. The input: a flags byte (bit 0: small limits, read from
// the next two bytes; bit 1: a last event ID to start from, the next byte its length), a byte whose
// low 3 bits give the number of chunk boundaries (each a two-byte position), then the body.
//
// Invariants:
// - the specification's examples (the WHATWG HTML "server-sent events" section) dispatch exactly
//   the events it describes;
// - whatever the chunks, the events dispatched, the last event ID and the reconnection time are
//   those of an **independent reference parser** written here from the specification: the whole
//   body decoded at once, split into lines, each line read as field and value and processed
//   literally (strings, not bytes; the specification's order of steps);
// - a limit error is thrown exactly when the reference crosses that limit — the first line longer
//   than the line limit, terminated or not, or the first `data` line that takes the event past the
//   event limit — after exactly the events before it; no event carries more data than the limit
//   (in the body's bytes);
// - after `finish()`, the same body read again as a reconnection (from the last event ID) gives the
//   reference's events for it.
import Foundation

/// The specification's examples and what they dispatch (event type, data, last event ID).
private let examples: [(body: String, events: [(type: String, data: String, id: String?)])] = [
    (
        "data: This is the first message.\n\ndata: This is the second message, it\ndata: has two lines.\n\ndata: This is the third message.\n\n",
        [("message", "This is the first message.", nil), ("message", "This is the second message, it\nhas two lines.", nil), ("message", "This is the third message.", nil)]
    ),
    ("event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n", [("add", "73857293", nil), ("remove", "2153", nil), ("add", "113411", nil)]),
    ("data: YHOO\ndata: +2\ndata: 10\n\n", [("message", "YHOO\n+2\n10", nil)]),
    (": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n", [("message", "first event", "1"), ("message", "second event", nil)]),
    ("data\n\ndata\ndata\n\ndata:", [("message", "", nil), ("message", "\n", nil)]),
    ("data:test\n\ndata: test\n\n", [("message", "test", nil), ("message", "test", nil)]),
]

nonisolated(unsafe) private var examplesChecked = false

func fuzzTarget(_ bytes: [UInt8]) {
    if !examplesChecked {
        examplesChecked = true
        for (body, expected) in examples {
            var parser = ServerSentEventParser()
            let events = (try? parser.parse(Data(body.utf8))) ?? []
            require(events.count == expected.count, "the example \(body.debugDescription) dispatched \(events.count) events, not \(expected.count)")
            for (event, want) in zip(events, expected) {
                require(event.event == want.type && same(event.data, want.data) && event.id == want.id,
                        "the example \(body.debugDescription) dispatched \(event), not \(want)")
            }
        }
    }

    var input = FuzzInput(bytes)
    let flags = input.byte()
    var maxLine = 1 << 20
    var maxEvent = 8 << 20
    if flags & 1 != 0 {
        maxLine = Int(input.byte()) + 1
        maxEvent = Int(input.byte()) * 2 + 1
    }
    var lastEventID = ""
    if flags & 2 != 0 {
        let length = Int(input.byte() % 8)
        lastEventID = String(decoding: (0..<length).map { _ in input.byte() }.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0 }, as: UTF8.self)
    }
    let boundaryCount = Int(input.byte() & 7)
    var boundaries = (0..<boundaryCount).map { _ in input.uint16() }
    let body = Array(input.bytes)
    boundaries = boundaries.map { body.isEmpty ? 0 : $0 % (body.count + 1) }.sorted()

    let expected = reference(body, lastEventID: lastEventID, maxLine: maxLine, maxEvent: maxEvent)
    var parser = ServerSentEventParser(lastEventID: lastEventID, maxLineBytes: maxLine, maxEventBytes: maxEvent)
    var events: [ServerSentEvent] = []
    var thrown: ServerSentEventError?
    var start = 0
    for end in boundaries + [body.count] {
        do {
            try parser.parse(Data(body[start..<end])) { events.append($0) }
        } catch {
            thrown = error
            break
        }
        start = end
    }
    require(thrown == expected.error, "threw \(String(describing: thrown)); the reference \(String(describing: expected.error)) (limits \(maxLine), \(maxEvent))")
    compare(events, expected.events, "read in chunks ending at \(boundaries)")
    for event in events {
        // Counted in the body's bytes: each U+FFFD stands for at least one (invalid) byte.
        let replacements = event.data.unicodeScalars.count { $0 == "\u{FFFD}" }
        require(event.data.utf8.count - 2 * replacements <= maxEvent, "an event carries \(event.data.utf8.count) bytes of data, over the limit of \(maxEvent)")
    }
    guard thrown == nil else { return }
    require(parser.lastEventID == expected.lastEventID, "last event ID \(parser.lastEventID.debugDescription); the reference \(expected.lastEventID.debugDescription)")
    require(parser.reconnectionTime == expected.retry, "reconnection time \(String(describing: parser.reconnectionTime)); the reference \(String(describing: expected.retry))")

    // The same body again, as a reconnection: the next body starts clean, from the last event ID.
    parser.finish()
    let again = reference(body, lastEventID: expected.lastEventID, maxLine: maxLine, maxEvent: maxEvent)
    var reread: [ServerSentEvent] = []
    do {
        try parser.parse(Data(body)) { reread.append($0) }
    } catch {
        fail("the body read again threw \(error), having been read once without")
    }
    compare(reread.map { ServerSentEvent(id: $0.id, event: $0.event, data: $0.data) }, again.events, "read again after finish()")
}

/// Equal as UTF-8 bytes (`String`'s `==` is canonical equivalence, too lenient for an oracle).
private func same(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
}

private func compare(_ got: [ServerSentEvent], _ expected: [(type: String, data: String, id: String)], _ how: String) {
    require(got.count == expected.count, "\(how): \(got.count) events, the reference \(expected.count): \(got) vs \(expected)")
    for (index, (event, want)) in zip(got, expected).enumerated() {
        require(same(event.event, want.type), "\(how): event \(index) has type \(event.event.debugDescription), the reference \(want.type.debugDescription)")
        require(same(event.data, want.data), "\(how): event \(index) has data \(event.data.debugDescription), the reference \(want.data.debugDescription)")
        require(same(event.id ?? "", want.id), "\(how): event \(index) has ID \(String(describing: event.id)), the reference \(want.id.debugDescription)")
    }
}

private func compare(_ got: [ServerSentEvent], _ expected: [ReferenceEvent], _ how: String) {
    compare(got, expected.map { ($0.type, $0.data, $0.id) }, how)
}

private struct ReferenceEvent {
    var type: String
    var data: String
    var id: String
}

private struct ReferenceResult {
    var events: [ReferenceEvent] = []
    var lastEventID: String
    var retry: Duration?
    var error: ServerSentEventError?
}

/// The specification's interpretation, step by step, on the whole body at once.
private func reference(_ body: [UInt8], lastEventID: String, maxLine: Int, maxEvent: Int) -> ReferenceResult {
    var result = ReferenceResult(lastEventID: lastEventID)
    // "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark (BOM), if any."
    var stream = body[...]
    if stream.starts(with: [0xEF, 0xBB, 0xBF]) { stream = stream.dropFirst(3) }
    // Lines end with CR LF, a lone LF or a lone CR; what follows the last line break is no line.
    var lines: [ArraySlice<UInt8>] = []
    var lineStart = stream.startIndex
    var index = stream.startIndex
    while index < stream.endIndex {
        switch stream[index] {
        case 0x0D:
            lines.append(stream[lineStart..<index])
            index += stream.index(after: index) < stream.endIndex && stream[index + 1] == 0x0A ? 2 : 1
            lineStart = index
        case 0x0A:
            lines.append(stream[lineStart..<index])
            index += 1
            lineStart = index
        default:
            index += 1
        }
    }
    let unterminated = stream[lineStart...]

    var data = ""
    var dataLength = 0  // the data buffer's length in the body's bytes
    var eventType = ""
    var idBuffer = lastEventID
    for line in lines {
        if line.count > maxLine {
            result.error = .lineTooLong(limit: maxLine)
            return result
        }
        if line.isEmpty {
            // Dispatch the event.
            result.lastEventID = idBuffer
            if data.isEmpty {
                eventType = ""
                continue
            }
            if data.hasSuffix("\n") { data.removeLast() }
            result.events.append(ReferenceEvent(type: eventType.isEmpty ? "message" : eventType, data: data, id: result.lastEventID))
            data = ""
            dataLength = 0
            eventType = ""
            continue
        }
        if line.first == UInt8(ascii: ":") { continue }
        let field: String
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = []
        }
        let text = String(decoding: value, as: UTF8.self)
        switch field {
        case "event":
            eventType = text
        case "data":
            if dataLength + value.count > maxEvent {
                result.error = .eventTooLarge(limit: maxEvent)
                return result
            }
            data += text + "\n"
            dataLength += value.count + 1
        case "id":
            if !text.unicodeScalars.contains("\u{0}") { idBuffer = text }
        case "retry":
            if !text.isEmpty, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) {
                result.retry = .milliseconds(Int64(text) ?? .max)
            }
        default:
            break
        }
    }
    // Bytes that may still be the start of a byte order mark are no line yet.
    let maybeByteOrderMark = lines.isEmpty && stream.startIndex == body.startIndex && [0xEF, 0xBB, 0xBF].starts(with: unterminated)
    if unterminated.count > maxLine, !maybeByteOrderMark { result.error = .lineTooLong(limit: maxLine) }
    return result
}
