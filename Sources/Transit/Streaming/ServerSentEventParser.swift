import Foundation

/// The state machine that reads a `text/event-stream` body into ``ServerSentEvent``s, exactly as
/// the WHATWG HTML specification's "server-sent events" section interprets it, fed the body in
/// chunks of any size.
///
/// - The stream is UTF-8: invalid bytes read as U+FFFD, and one byte order mark at its very start
///   is skipped.
/// - Lines end with CR LF, LF or CR, a CR at the end of one chunk and the LF at the start of the
///   next included.
/// - A line starting with `:` is a comment. Otherwise the field name is what comes before the first
///   `:` and the value what follows, without one leading space; a line without `:` is a field
///   name with an empty value.
/// - `data` appends its value and a line break to the event's data; `event` sets its type; `id`
///   sets the last event ID unless the value contains U+0000 NULL; `retry` of ASCII digits only
///   sets the reconnection time (milliseconds); any other field is ignored.
/// - A blank line dispatches the event: the last event ID is taken as the stream's, and an event
///   with data is delivered (its data without the last line break, its type `message` by default);
///   the data and the type start again empty, the last event ID persists.
/// - At the end of the stream (``finish()``) an event not yet dispatched and an unterminated line
///   are discarded.
///
/// Memory is bounded: a line longer than ``maxLineBytes`` fails with
/// ``ServerSentEventError/lineTooLong(limit:)`` and an event whose data passes ``maxEventBytes``
/// with ``ServerSentEventError/eventTooLarge(limit:)``, as soon as the byte that crosses the
/// limit is read; after an error the parser must not be fed again.
///
/// ```swift
/// var parser = ServerSentEventParser()
/// try parser.parse(chunk) { event in print(event.data) }
/// ```
public struct ServerSentEventParser: Sendable {
    /// The longest line accepted, in bytes, without its line break.
    public let maxLineBytes: Int
    /// The most data an event may carry, in bytes: its `data` lines joined with line breaks.
    public let maxEventBytes: Int
    /// The stream's last event ID: set by each dispatch from the latest `id` field; empty when
    /// there is none. A reconnection sends it as `Last-Event-ID` and gives it to the next
    /// connection's parser.
    public private(set) var lastEventID: String
    /// The reconnection time the server set with its latest `retry` field, `nil` while none.
    public private(set) var reconnectionTime: Duration?

    /// The bytes of the line being read, when it did not end in the chunk it started in.
    private var line: [UInt8] = []
    /// The data buffer: each `data` value followed by a line feed.
    private var data: [UInt8] = []
    /// The event type buffer.
    private var eventType: [UInt8] = []
    /// The last event ID buffer.
    private var idBuffer: [UInt8]
    /// `true` when an `id` field changed ``idBuffer`` since ``lastEventID`` was last set from it.
    private var idChanged = false
    /// `true` when the previous chunk ended with a CR: a LF that starts the next one ends nothing.
    private var skipsLineFeed = false
    /// How many bytes of the byte order mark the stream has started with so far; `nil` once the
    /// start of the stream is past.
    private var byteOrderMarkMatched: Int? = 0

    /// Creates a parser for one connection's body.
    ///
    /// - Parameters:
    ///   - lastEventID: the last event ID so far: empty for a new stream (as the specification
    ///     initialises it), the previous connection's ``lastEventID`` for a reconnection (as
    ///     browsers do), so an event without `id` after reconnecting keeps it.
    ///   - reconnectionTime: the reconnection time a previous connection's server set, if any.
    ///   - maxLineBytes: the longest line accepted (at least 1; 1 MiB unless given).
    ///   - maxEventBytes: the most data one event may carry (at least 1; 8 MiB unless given).
    public init(lastEventID: String = "", reconnectionTime: Duration? = nil, maxLineBytes: Int = 1 << 20, maxEventBytes: Int = 8 << 20) {
        self.lastEventID = lastEventID
        self.reconnectionTime = reconnectionTime
        idBuffer = Array(lastEventID.utf8)
        self.maxLineBytes = max(1, maxLineBytes)
        self.maxEventBytes = max(1, maxEventBytes)
    }

    /// Reads the next bytes of the body and calls `dispatch` with each event they complete, in
    /// order.
    ///
    /// - Throws: ``ServerSentEventError/lineTooLong(limit:)`` or
    ///   ``ServerSentEventError/eventTooLarge(limit:)``; the events before the offending byte were
    ///   dispatched.
    public mutating func parse(_ chunk: Data, dispatch: (ServerSentEvent) -> Void) throws(ServerSentEventError) {
        let result: Result<Void, ServerSentEventError> = chunk.withUnsafeBytes { bytes in
            do throws(ServerSentEventError) {
                try parse(bytes, dispatch: dispatch)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Reads the next bytes of the body and returns the events they complete, in order. See
    /// `parse(_:dispatch:)`.
    public mutating func parse(_ chunk: Data) throws(ServerSentEventError) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        try parse(chunk) { events.append($0) }
        return events
    }

    /// `parse(_:dispatch:)` on raw bytes.
    public mutating func parse(_ chunk: UnsafeRawBufferPointer, dispatch: (ServerSentEvent) -> Void) throws(ServerSentEventError) {
        var index = 0
        let count = chunk.count
        if let matched = byteOrderMarkMatched {
            index = try skipByteOrderMark(chunk, matched: matched)
        }
        if skipsLineFeed, index < count {
            skipsLineFeed = false
            if chunk[index] == Self.lineFeed { index += 1 }
        }
        while index < count {
            var end = index
            while end < count {
                let byte = chunk[end]
                if byte == Self.lineFeed || byte == Self.carriageReturn { break }
                end += 1
            }
            guard end < count else {
                try appendToLine(UnsafeRawBufferPointer(rebasing: chunk[index..<count]))
                return
            }
            if line.isEmpty {
                guard end - index <= maxLineBytes else { throw .lineTooLong(limit: maxLineBytes) }
                try process(UnsafeRawBufferPointer(rebasing: chunk[index..<end]), dispatch: dispatch)
            } else {
                try appendToLine(UnsafeRawBufferPointer(rebasing: chunk[index..<end]))
                let whole = line
                try whole.withUnsafeBytes { bytes in
                    Result { () throws(ServerSentEventError) in try process(bytes, dispatch: dispatch) }
                }.get()
                // A long line's buffer is let go; a short one's is kept for the next.
                line.removeAll(keepingCapacity: line.capacity <= Self.keptLineCapacity)
            }
            if chunk[end] == Self.carriageReturn {
                if end + 1 < count {
                    if chunk[end + 1] == Self.lineFeed { end += 1 }
                } else {
                    skipsLineFeed = true
                }
            }
            index = end + 1
        }
    }

    /// The end of the body: an unterminated line and an event not yet dispatched (with its `id`,
    /// if it had one) are discarded. The last event ID and the reconnection time stay. The parser may then read a new body (as
    /// a reconnection's), from its start.
    public mutating func finish() {
        line.removeAll()
        data.removeAll()
        eventType.removeAll()
        // An `id` of the discarded event is discarded with it: the next body starts from the last
        // event ID taken.
        idBuffer = Array(lastEventID.utf8)
        idChanged = false
        skipsLineFeed = false
        byteOrderMarkMatched = 0
    }

    // MARK: - Lines

    private static let lineFeed: UInt8 = 0x0A
    private static let carriageReturn: UInt8 = 0x0D
    private static let colon: UInt8 = 0x3A
    private static let space: UInt8 = 0x20
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    /// The line buffer's capacity kept between lines.
    private static let keptLineCapacity = 4096

    /// Skips the byte order mark at the start of the stream, however the chunks split it; returns
    /// where the rest of `chunk` starts. Bytes that began like the mark but were not it are read
    /// as the start of the first line.
    private mutating func skipByteOrderMark(_ chunk: UnsafeRawBufferPointer, matched: Int) throws(ServerSentEventError) -> Int {
        var matched = matched
        var index = 0
        while index < chunk.count, matched < Self.byteOrderMark.count {
            guard chunk[index] == Self.byteOrderMark[matched] else {
                byteOrderMarkMatched = nil
                try appendToLine(Self.byteOrderMark[..<matched])
                return index
            }
            matched += 1
            index += 1
        }
        byteOrderMarkMatched = matched == Self.byteOrderMark.count ? nil : matched
        return index
    }

    /// Adds bytes of an unterminated line to ``line``, within the line limit.
    private mutating func appendToLine(_ bytes: some Collection<UInt8>) throws(ServerSentEventError) {
        guard !bytes.isEmpty else { return }
        guard bytes.count <= maxLineBytes - line.count else { throw .lineTooLong(limit: maxLineBytes) }
        line.append(contentsOf: bytes)
    }

    /// Interprets one line (without its line break).
    private mutating func process(_ line: UnsafeRawBufferPointer, dispatch: (ServerSentEvent) -> Void) throws(ServerSentEventError) {
        guard let first = line.first else { return dispatchEvent(dispatch) }
        if first == Self.colon { return }
        let name: UnsafeRawBufferPointer
        var value: UnsafeRawBufferPointer
        if let colon = line.firstIndex(of: Self.colon) {
            name = UnsafeRawBufferPointer(rebasing: line[..<colon])
            value = UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])
            if value.first == Self.space { value = UnsafeRawBufferPointer(rebasing: value[1...]) }
        } else {
            name = line
            value = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        switch name.count {
        case 4 where name.elementsEqual("data".utf8):
            guard value.count <= maxEventBytes - data.count else { throw .eventTooLarge(limit: maxEventBytes) }
            data.append(contentsOf: value)
            data.append(Self.lineFeed)
        case 5 where name.elementsEqual("event".utf8):
            eventType.removeAll(keepingCapacity: true)
            eventType.append(contentsOf: value)
        case 2 where name.elementsEqual("id".utf8):
            guard !value.contains(0) else { return }
            idBuffer.removeAll(keepingCapacity: true)
            idBuffer.append(contentsOf: value)
            idChanged = true
        case 5 where name.elementsEqual("retry".utf8):
            guard !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return }
            var milliseconds: Int64 = 0
            for digit in value {
                let (times, overflowTimes) = milliseconds.multipliedReportingOverflow(by: 10)
                let (sum, overflowSum) = times.addingReportingOverflow(Int64(digit - 0x30))
                guard !overflowTimes, !overflowSum else {
                    milliseconds = .max
                    break
                }
                milliseconds = sum
            }
            reconnectionTime = .milliseconds(milliseconds)
        default:
            return
        }
    }

    /// The blank line: the last event ID is the stream's, and an event with data is dispatched.
    private mutating func dispatchEvent(_ dispatch: (ServerSentEvent) -> Void) {
        if idChanged {
            lastEventID = String(decoding: idBuffer, as: UTF8.self)
            idChanged = false
        }
        guard !data.isEmpty else {
            eventType.removeAll(keepingCapacity: true)
            return
        }
        data.removeLast()
        let event = ServerSentEvent(
            id: lastEventID.isEmpty ? nil : lastEventID,
            event: eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self),
            data: String(decoding: data, as: UTF8.self),
            retry: reconnectionTime
        )
        data.removeAll(keepingCapacity: data.capacity <= Self.keptLineCapacity)
        eventType.removeAll(keepingCapacity: true)
        dispatch(event)
    }
}
