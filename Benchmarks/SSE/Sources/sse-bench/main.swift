import EventSource
import Foundation
import Transit

// `Benchmarks/SSE/run.sh`: Server-Sent Events parsed per second, and
// the peak memory of a long stream, Transit's `ServerSentEventParser` against mattt/EventSource's
// parser (`AsyncSequence<UInt8>.events`, the way its users read a body), in the same run.
//
//     sse-bench                      throughput, both parsers, rounds alternating
//     sse-bench --memory transit     one long stream through one parser, in this process alone:
//     sse-bench --memory eventsource prints the peak resident memory (VmHWM) before and after
//
// The stream: events of a live feed as a server sends them (`id`, `event`, a one-line JSON
// `data` of about 120 bytes, a blank line), in 16 KiB chunks as a socket delivers them.

/// One event of the feed, as the server writes it.
func eventText(_ index: Int) -> String {
    "id: \(index)\nevent: post\ndata: {\"id\":\(index),\"author\":\"ada\",\"title\":\"Post number \(index)\",\"body\":\"Lorem ipsum dolor sit amet, consectetur adipiscing elit.\"}\n\n"
}

/// `count` events as 16 KiB chunks.
func makeChunks(events count: Int, chunkSize: Int = 16 << 10) -> [Data] {
    var stream = Data()
    stream.reserveCapacity(count * 170)
    for index in 0..<count { stream.append(contentsOf: Array(eventText(index).utf8)) }
    var chunks: [Data] = []
    var offset = 0
    while offset < stream.count {
        let end = min(offset + chunkSize, stream.count)
        chunks.append(stream.subdata(in: offset..<end))
        offset = end
    }
    return chunks
}

/// The chunks as the bytes of a body, one at a time (what `URLSession.AsyncBytes` gives).
struct ChunkBytes: AsyncSequence, Sendable {
    typealias Element = UInt8
    let chunks: [Data]

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: [Data]
        var chunk = 0
        var index = 0
        mutating func next() async -> UInt8? {
            while chunk < chunks.count {
                let data = chunks[chunk]
                if index < data.count {
                    defer { index += 1 }
                    return data[data.startIndex + index]
                }
                chunk += 1
                index = 0
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: chunks) }
}

/// A field of `/proc/self/status` in KiB (`VmHWM`: the peak resident set), -1 where unreadable.
func procStatusKiB(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
    }
    return -1
}

/// Events Transit's parser dispatches for `chunks`, and the bytes of their data.
func parseWithTransit(_ chunks: [Data]) throws -> (events: Int, dataBytes: Int) {
    var parser = ServerSentEventParser()
    var events = 0
    var dataBytes = 0
    for chunk in chunks {
        try parser.parse(chunk) { event in
            events += 1
            dataBytes += event.data.utf8.count
        }
    }
    parser.finish()
    return (events, dataBytes)
}

/// Events EventSource's parser yields for `chunks`, and the bytes of their data.
func parseWithEventSource(_ chunks: [Data]) async throws -> (events: Int, dataBytes: Int) {
    var events = 0
    var dataBytes = 0
    for try await event in ChunkBytes(chunks: chunks).events {
        events += 1
        dataBytes += event.data.utf8.count
    }
    return (events, dataBytes)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

var arguments = CommandLine.arguments.dropFirst()
var memoryOf: String?
var rounds = 5
var transitEvents = 1_000_000
var peerEvents = 50_000
var longEvents = 500_000
while let argument = arguments.popFirst() {
    switch argument {
    case "--memory": memoryOf = arguments.popFirst()
    case "--rounds": rounds = arguments.popFirst().flatMap { Int($0) } ?? rounds
    case "--events": transitEvents = arguments.popFirst().flatMap { Int($0) } ?? transitEvents
    case "--peer-events": peerEvents = arguments.popFirst().flatMap { Int($0) } ?? peerEvents
    case "--long-events": longEvents = arguments.popFirst().flatMap { Int($0) } ?? longEvents
    default:
        print("usage: sse-bench [--rounds R] [--events N] [--peer-events N] | --memory transit|eventsource [--long-events N]")
        exit(2)
    }
}

if let memoryOf {
    // A long stream in pieces of 10,000 events, each piece made, parsed and dropped, so that what
    // the process holds at its peak is the parser's own state and one piece.
    let before = procStatusKiB("VmHWM")
    let piece = 10_000
    var total = 0
    let started = ContinuousClock.now
    switch memoryOf {
    case "transit":
        var parser = ServerSentEventParser()
        var index = 0
        while index < longEvents {
            let chunks = makeChunks(events: piece)
            for chunk in chunks { try parser.parse(chunk) { _ in total += 1 } }
            index += piece
        }
    case "eventsource":
        // One sequence over the whole stream (one parser, as one connection has), pieces made
        // as it reads.
        struct Pieces: AsyncSequence, Sendable {
            typealias Element = UInt8
            let count: Int
            let piece: Int
            struct AsyncIterator: AsyncIteratorProtocol {
                let count: Int
                let piece: Int
                var made = 0
                var inner: ChunkBytes.AsyncIterator?
                mutating func next() async -> UInt8? {
                    while true {
                        if var iterator = inner, let byte = await iterator.next() {
                            inner = iterator
                            return byte
                        }
                        guard made < count else { return nil }
                        inner = ChunkBytes(chunks: makeChunks(events: piece)).makeAsyncIterator()
                        made += piece
                    }
                }
            }
            func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, piece: piece) }
        }
        for try await _ in Pieces(count: longEvents, piece: piece).events { total += 1 }
    default:
        print("--memory takes transit or eventsource")
        exit(2)
    }
    let elapsed = seconds(ContinuousClock.now - started)
    print("\(memoryOf): \(total) events in \(String(format: "%.1f", elapsed)) s, peak resident \(before / 1024) MiB before, \(procStatusKiB("VmHWM") / 1024) MiB after")
    exit(total == longEvents ? 0 : 1)
}

let transitChunks = makeChunks(events: transitEvents)
let peerChunks = makeChunks(events: peerEvents)
// Both parsers agree on what the stream holds.
let expected = try parseWithTransit(peerChunks)
let peerResult = try await parseWithEventSource(peerChunks)
precondition(expected == peerResult && expected.events == peerEvents, "the parsers disagree: \(expected) against \(peerResult)")

var transitRates: [Double] = []
var peerRates: [Double] = []
for round in 1...rounds {
    // Alternate which parser goes first.
    for first in round % 2 == 1 ? [true, false] : [false, true] {
        if first {
            let started = ContinuousClock.now
            let result = try parseWithTransit(transitChunks)
            precondition(result.events == transitEvents)
            transitRates.append(Double(transitEvents) / seconds(ContinuousClock.now - started))
        } else {
            let started = ContinuousClock.now
            let result = try await parseWithEventSource(peerChunks)
            precondition(result.events == peerEvents)
            peerRates.append(Double(peerEvents) / seconds(ContinuousClock.now - started))
        }
    }
    print("round \(round): Transit \(Int(transitRates.last!)) events/s, EventSource \(Int(peerRates.last!)) events/s")
}
let bytesPerEvent = Double(transitChunks.reduce(0) { $0 + $1.count }) / Double(transitEvents)
print(String(format: "Transit ServerSentEventParser: median %d events/s (%.0f MB/s of stream)", Int(median(transitRates)), median(transitRates) * bytesPerEvent / 1e6))
print(String(format: "mattt/EventSource 1.1.1 (AsyncSequence.events): median %d events/s (%.1f MB/s of stream)", Int(median(peerRates)), median(peerRates) * bytesPerEvent / 1e6))
print(String(format: "ratio Transit / EventSource: %.0f×", median(transitRates) / median(peerRates)))
