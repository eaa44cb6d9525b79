// A child process for TransitCache's fault-injection tests (`Tests/TransitCacheTests`), which
// start it, let it write, and kill it or change its file system under it:
//
//   TransitCacheChild slow-write DIR KEY   writes a large record slowly, printing "writing"
//                                          once the first chunk is on disk; never finishes
//   TransitCacheChild churn DIR KEY        stores records of varying sizes under KEY in a loop,
//                                          printing "committed N" after each
//   TransitCacheChild fs-faults DIR        (run under `unshare --user --map-root-user --mount`)
//                                          mounts a 1 MiB tmpfs on DIR, fills it, remounts it
//                                          read-only, and prints what the cache did, one
//                                          "name=value" line per observation, HTTP
//                                          responses through the cache included
//   TransitCacheChild big-download DIR MiB  streams a MiB-sized response through the HTTP
//                                          cache, then serves it from the cache, and prints
//                                          the peak resident memory after each
//   TransitCacheChild remove-all DIR       removes every record (a sign-out in another
//                                          process), then prints "removed"
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitCache
import TransitTesting
#if canImport(Glibc)
import Glibc
#endif

/// Writes a line to standard output at once (unbuffered: the parent waits for it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("TransitCacheChild: \(message)\n".utf8))
    exit(2)
}

/// The payload the churn mode stores as its `index`th record: a length and a byte that a reader
/// can recompute from the index in the metadata.
func churnPayload(_ index: Int) -> Data {
    Data(repeating: UInt8(index % 251), count: 1000 + (index &* 7919) % 300_000)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: TransitCacheChild MODE DIR [KEY]") }
let directory = URL(fileURLWithPath: arguments[2])

switch arguments[1] {
case "slow-write":
    guard arguments.count >= 4 else { fail("slow-write needs a key") }
    do {
        let cache = try DiskCache(directory: directory)
        let writer = try cache.makeWriter(forKey: arguments[3], metadata: Data("new".utf8))
        let chunk = Data(repeating: 0x5A, count: 256 * 1024)
        try writer.append(chunk)
        say("writing")
        while true {
            try writer.append(chunk)
            usleep(2000)
        }
    } catch {
        fail("\(error)")
    }

case "churn":
    guard arguments.count >= 4 else { fail("churn needs a key") }
    do {
        let cache = try DiskCache(directory: directory)
        var index = 0
        while true {
            try cache.store(churnPayload(index), forKey: arguments[3], metadata: Data("\(index)".utf8))
            say("committed \(index)")
            index += 1
        }
    } catch {
        fail("\(error)")
    }

case "fs-faults":
    #if os(Linux)
    // Two volumes: one to fill, one to make read-only (a cache that served HTTP may still be
    // finishing on its queue when its caller returns, which would keep the first one busy).
    let full = directory.appendingPathComponent("full")
    let readOnly = directory.appendingPathComponent("readonly")
    for volume in [full, readOnly] {
        do {
            try FileManager.default.createDirectory(at: volume, withIntermediateDirectories: true)
        } catch {
            fail("create \(volume.path): \(error)")
        }
        guard mount("tmpfs", volume.path, "tmpfs", 0, "size=1048576") == 0 else {
            fail("mount tmpfs: \(String(cString: strerror(errno)))")
        }
    }
    do {
        try fillFolder(full)
        try DiskCache(directory: readOnly).store(Data(repeating: 1, count: 10_000), forKey: "small")
        guard mount("none", readOnly.path, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0 else {
            fail("remount read-only: \(String(cString: strerror(errno)))")
        }
        try useReadOnlyFolder(readOnly)
    } catch {
        fail("\(error)")
    }
    #else
    fail("fs-faults needs Linux")
    #endif

case "big-download":
    guard arguments.count >= 4, let mebibytes = Int(arguments[3]) else { fail("big-download needs a size in MiB") }
    do {
        try bigDownload(directory, bytes: mebibytes << 20)
    } catch {
        fail("\(error)")
    }

case "remove-all":
    do {
        try DiskCache(directory: directory).removeAll()
        say("removed")
    } catch {
        fail("\(error)")
    }

default:
    fail("unknown mode \(arguments[1])")
}

/// Stores a small record, then one larger than the volume, then fetches a response larger than
/// the volume through the HTTP cache; reports what happened.
func fillFolder(_ directory: URL) throws {
    let cache = try DiskCache(directory: directory)
    try cache.store(Data(repeating: 1, count: 10_000), forKey: "small")
    do {
        try cache.store(Data(repeating: 2, count: 4 * 1024 * 1024), forKey: "big")
        say("full=stored")
    } catch let error as CacheError {
        if case .folderFull = error { say("full=folderFull") } else { say("full=\(error)") }
        say("fullMessage=\(error.description)")
    }
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".tmp-") }
    say("temporaryFilesAfterFull=\(leftovers.count)")
    say("smallAfterFull=\(try cache.record(forKey: "small")?.data.count ?? -1)")
    say("bigAfterFull=\(try cache.record(forKey: "big")?.data.count ?? -1)")

    let (bytes, events) = try fetchThroughCache(directory, body: Data(repeating: 3, count: 2 * 1024 * 1024))
    say("httpBytesWhenFull=\(bytes)")
    say("httpEventsWhenFull=\(events)")
}

/// Opens the cache on the read-only volume, reads, tries to store and pin; reports what happened.
func useReadOnlyFolder(_ directory: URL) throws {
    let cache = try DiskCache(directory: directory)
    say("readOnlyOpened=yes")
    say("smallReadOnly=\(try cache.record(forKey: "small")?.data.count ?? -1)")
    do {
        try cache.store(Data("x".utf8), forKey: "new")
        say("readOnlyStore=stored")
    } catch let error as CacheError {
        if case .folderNotWritable = error { say("readOnlyStore=folderNotWritable") } else { say("readOnlyStore=\(error)") }
        say("readOnlyMessage=\(error.description)")
    }
    do {
        try cache.pin("small")
        say("readOnlyPin=pinned")
    } catch let error as CacheError {
        if case .folderNotWritable = error { say("readOnlyPin=folderNotWritable") } else { say("readOnlyPin=\(error)") }
    }
    let report = try cache.collectGarbage()
    say("readOnlyGarbageCollection=\(report.evicted + report.expiredRemoved)")

    let (bytes, events) = try fetchThroughCache(directory, body: Data(repeating: 4, count: 5000))
    say("httpBytesReadOnly=\(bytes)")
    say("httpEventsReadOnly=\(events)")
}

/// Fetches a cacheable response with `body` through an HTTP cache in `directory` (the network
/// is a stub transport); returns the body bytes received and the cache's events, named.
func fetchThroughCache(_ directory: URL, body: Data) throws -> (Int, String) {
    let cache = try HTTPCache(records: DiskCache(directory: directory))
    let stub = StubTransport()
    stub.stub(.get, path: "/data").thenRespond(.status(200, headers: ["Cache-Control": "max-age=600"], body: body))
    let events = Locked<[String]>([])
    let eventToken = cache.events.sink { event in events.withLock { $0.append(event.shortName) } }
    let response = try wait(stub.caching(in: cache).send(URLRequest(url: URL(string: "https://example.com/data")!)))
    _ = eventToken
    return (response.data.count, events.withLock { $0.joined(separator: ",") })
}

/// Subscribes to `signal` and blocks until its first value or its failure.
func wait<Output: Sendable>(_ signal: Signal<Output, any Error>) throws -> Output {
    let semaphore = DispatchSemaphore(value: 0)
    let result = Locked<Result<Output, any Error>?>(nil)
    let token = signal.sink(
        receiveCompletion: { completion in
            if case .failure(let error) = completion { result.withLock { $0 = $0 ?? .failure(error) } }
            semaphore.signal()
        },
        receiveValue: { value in result.withLock { $0 = $0 ?? .success(value) } }
    )
    semaphore.wait()
    _ = token
    guard let outcome = result.withLock({ $0 }) else { fail("the signal finished without a value") }
    return try outcome.get()
}

/// A transport that makes up a `bytes`-long response as it is read, in 64 KiB chunks: the
/// response of a large download without the memory to hold it.
struct GeneratedTransport: HTTPTransport {
    let bytes: Int

    static func chunk(_ index: Int) -> Data {
        Data(repeating: UInt8(truncatingIfNeeded: index &* 7 &+ 1), count: 64 * 1024)
    }

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let bytes = self.bytes
        return Signal { observer in
            let head = HTTPResponseHead(
                url: request.urlRequest.url!, statusCode: 200,
                headerFields: ["Cache-Control": "max-age=600", "Content-Length": "\(bytes)"]
            )
            observer.send(.head(head))
            for index in 0..<(bytes / (64 * 1024)) {
                observer.send(.body(GeneratedTransport.chunk(index)))
            }
            observer.finish()
            return nil
        }
    }
}

/// The peak resident memory of this process so far, in KiB (`VmHWM`).
func peakResidentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return -1 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// Streams `bytes` through the HTTP cache (stored as it passes), then again (served from the
/// cache), checking every chunk and reporting the peak resident memory after each.
func bigDownload(_ directory: URL, bytes: Int) throws {
    let records = try DiskCache(directory: directory, configuration: .init(sizeLimit: bytes + (64 << 20)))
    let cache = HTTPCache(records: records)
    let transport = GeneratedTransport(bytes: bytes).caching(in: cache)
    let events = Locked<[HTTPCacheEvent]>([])
    let eventToken = cache.events.sink { event in events.withLock { $0.append(event) } }
    for pass in ["Download", "Serve"] {
        let received = Locked((bytes: 0, chunks: 0, wrong: 0, pending: Data()))
        let semaphore = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        let token = transport.exchange(TransportRequest(URLRequest(url: URL(string: "https://example.com/big")!))).sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion { failure.withLock { $0 = error } }
                semaphore.signal()
            },
            receiveValue: { part in
                guard case .body(let chunk) = part else { return }
                // Compare with the generated content in 64 KiB units, whatever the chunking.
                received.withLock { state in
                    state.pending.append(chunk)
                    while state.pending.count >= 64 * 1024 {
                        let unit = state.pending.prefix(64 * 1024)
                        if unit != GeneratedTransport.chunk(state.chunks) { state.wrong += 1 }
                        state.chunks += 1
                        state.pending = Data(state.pending.dropFirst(64 * 1024))
                    }
                    state.bytes += chunk.count
                }
            }
        )
        semaphore.wait()
        _ = token
        if let error = failure.withLock({ $0 }) { throw error }
        let result = received.withLock { $0 }
        say("bytes\(pass)=\(result.bytes)")
        say("wrongChunks\(pass)=\(result.wrong)")
        say("peakKiBAfter\(pass)=\(peakResidentKiB())")
    }
    _ = eventToken
    say("events=\(events.withLock { $0.map(\.shortName).joined(separator: ",") })")
}

extension HTTPCacheEvent {
    /// A short name for the event, for the parent to compare.
    var shortName: String {
        switch self {
        case .hit: return "hit"
        case .miss: return "miss"
        case .revalidated: return "revalidated"
        case .stored: return "stored"
        case .servedStaleOnError: return "servedStaleOnError"
        case .servedOffline: return "servedOffline"
        case .offlineMiss: return "offlineMiss"
        case .storeFailed(_, .folderFull): return "storeFailed(folderFull)"
        case .storeFailed(_, .folderNotWritable): return "storeFailed(folderNotWritable)"
        case .storeFailed(_, let error): return "storeFailed(\(error))"
        case .invalidated: return "invalidated"
        }
    }
}
