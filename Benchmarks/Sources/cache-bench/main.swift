// cache-bench: TransitCache's DiskCache against Foundation's URLCache, and a revalidated (304)
// request against a full download over loopback, in one run, on one machine.
//
//     cd Benchmarks && swift run -c release cache-bench [--repetitions N] [--records N] [--quick]
//
// Workloads (each contender runs `repetitions` times, interleaved; the tables show medians):
// - small records: store N records of one size in a fresh folder (writes per second), then read
//   each once in a shuffled order (reads per second, and the latency of each hit: median, p99);
//   sizes 1 KiB and 16 KiB; URLCache disk-only (memory capacity 0) and with a memory cache that
//   holds everything;
// - revalidation: a 1 MiB response over loopback (LoopbackServer, URLSessionTransport), fetched
//   in full every time, against the same response stored by the HTTP cache with
//   `Cache-Control: no-cache` and an ETag, so every request is a conditional one answered 304;
// Folders are made in the temporary folder unless `--scratch PATH` names another (a tmpfs such as
// /dev/shm separates the libraries' cost from the file system's).
// - streaming: a 1 GiB response through the HTTP cache (stored as it streams), then served back
//   from the cache, in a child process: its peak resident memory.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitCache
import TransitTesting

// MARK: - Configuration

var repetitions = 5
var recordCount = 2_000
let sizes = [1024, 16 * 1024]
var streamingMiB = 1024
var revalidationRequests = 200
/// `--streaming-child MiB`: the child process of the streaming workload.
var streamingChild: Int?
/// `--only records|revalidation|streaming`: run one workload.
var only: String?
/// `--contender TEXT`: run only the record stores whose name contains TEXT (for profiling).
var contenderFilter: String?
/// `--scratch PATH`: where the caches' folders are made (default: the temporary folder).
nonisolated(unsafe) var scratchRoot = NSTemporaryDirectory()
do {
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "--repetitions": repetitions = arguments.popFirst().flatMap(Int.init) ?? repetitions
        case "--records": recordCount = arguments.popFirst().flatMap(Int.init) ?? recordCount
        case "--streaming": streamingMiB = arguments.popFirst().flatMap(Int.init) ?? streamingMiB
        case "--streaming-child": streamingChild = arguments.popFirst().flatMap(Int.init)
        case "--only": only = arguments.popFirst()
        case "--contender": contenderFilter = arguments.popFirst()
        case "--scratch": scratchRoot = arguments.popFirst() ?? scratchRoot
        case "--quick":
            repetitions = 3
            recordCount = 500
            streamingMiB = 128
            revalidationRequests = 50
        default:
            print("usage: cache-bench [--repetitions N] [--records N] [--streaming MiB] [--quick] [--only records|revalidation|streaming] [--contender TEXT] [--scratch PATH]")
            exit(2)
        }
    }
}

func scratchFolder(_ name: String) -> URL {
    let url = URL(fileURLWithPath: scratchRoot).appendingPathComponent("cache-bench-\(name)-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}

func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }

func format(_ value: Double, decimals: Int = 0) -> String {
    let text = String(format: "%.\(decimals)f", value)
    guard decimals == 0, value >= 10_000 else { return text }
    var digits = Array(text)
    var index = digits.count - 3
    while index > 0 {
        digits.insert(",", at: index)
        index -= 3
    }
    return String(digits)
}

/// The peak resident memory of this process so far, in KiB (`VmHWM`), or -1.
func peakResidentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return -1 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// Where every read adds what it found, so no read can be optimised away.
nonisolated(unsafe) var checksum = 0

// MARK: - Small records

struct RecordRun {
    var writesPerSecond: Double
    var readsPerSecond: Double
    var hitLatencies: [Double]  // seconds
}

protocol RecordStore {
    var name: String { get }
    func open(_ folder: URL) -> any OpenStore
}

protocol OpenStore {
    func store(_ data: Data, key: Int)
    func read(key: Int) -> Int
}

struct DiskCacheStore: RecordStore {
    var name: String { "TransitCache DiskCache" }
    func open(_ folder: URL) -> any OpenStore {
        Opened(cache: try! DiskCache(directory: folder, configuration: .init(sizeLimit: 1 << 30, countLimit: 1_000_000)))
    }

    struct Opened: OpenStore {
        let cache: DiskCache
        func store(_ data: Data, key: Int) { try! cache.store(data, forKey: "https://example.com/records/\(key)") }
        func read(key: Int) -> Int { (try! cache.record(forKey: "https://example.com/records/\(key)"))!.data.count }
    }
}

struct URLCacheStore: RecordStore {
    let memoryCapacity: Int
    var name: String { memoryCapacity == 0 ? "URLCache (disk only)" : "URLCache (memory + disk)" }
    func open(_ folder: URL) -> any OpenStore {
        Opened(cache: URLCache(memoryCapacity: memoryCapacity, diskCapacity: 1 << 30, diskPath: folder.path))
    }

    struct Opened: OpenStore {
        let cache: URLCache
        static let response = HTTPURLResponse(url: URL(string: "https://example.com/")!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=600"])!
        func request(_ key: Int) -> URLRequest { URLRequest(url: URL(string: "https://example.com/records/\(key)")!) }
        func store(_ data: Data, key: Int) {
            cache.storeCachedResponse(CachedURLResponse(response: Opened.response, data: data), for: request(key))
        }
        func read(key: Int) -> Int { cache.cachedResponse(for: request(key))!.data.count }
    }
}

func runRecords(_ contender: any RecordStore, size: Int, count: Int) -> RecordRun {
    let folder = scratchFolder("records")
    defer { try? FileManager.default.removeItem(at: folder) }
    let store = contender.open(folder)
    let payloads = (0..<16).map { seed in Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }) }
    let clock = ContinuousClock()
    let writing = clock.measure {
        for key in 0..<count { store.store(payloads[key % payloads.count], key: key) }
    }
    var order = Array(0..<count)
    var generator = SystemRandomNumberGenerator()
    order.shuffle(using: &generator)
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    let reading = clock.measure {
        for key in order {
            let start = clock.now
            checksum &+= store.read(key: key)
            latencies.append(seconds(clock.now - start))
        }
    }
    return RecordRun(writesPerSecond: Double(count) / seconds(writing), readsPerSecond: Double(count) / seconds(reading), hitLatencies: latencies)
}

// MARK: - Revalidation over loopback

func revalidationBenchmark(requests: Int) async throws -> (full: [Double], revalidated: [Double]) {
    let body = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
    let server = LoopbackServer { request in
        if request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
            return .status(304, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
        }
        return .status(200, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache", "Content-Type": "application/octet-stream"], body: body)
    }
    try server.start()
    defer { server.stop() }
    // URLSession's own cache off, so the baseline really downloads every time.
    let configuration = URLSessionConfiguration.default
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    let network = URLSessionTransport(configuration: configuration)
    let folder = scratchFolder("http")
    defer { try? FileManager.default.removeItem(at: folder) }
    let cache = try HTTPCache(records: DiskCache(directory: folder))
    let cached = network.caching(in: cache)
    let request = URLRequest(url: server.url("/file"))
    // Warm up both paths (connections, the stored response).
    for _ in 0..<5 {
        _ = try await network.send(request).firstValue()
        _ = try await cached.send(request).firstValue()
    }
    var full: [Double] = []
    var revalidated: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<requests {
        var start = clock.now
        let downloaded = try await network.send(request).firstValue()
        full.append(seconds(clock.now - start))
        start = clock.now
        let served = try await cached.send(request).firstValue()
        revalidated.append(seconds(clock.now - start))
        precondition(downloaded.data.count == body.count && served.data == downloaded.data && served.statusCode == 200)
    }
    return (full, revalidated)
}

// MARK: - Streaming memory (child process)

/// A transport that makes up a response as it is read, in 64 KiB chunks.
struct GeneratedTransport: HTTPTransport {
    let bytes: Int

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let bytes = self.bytes
        return Signal { observer in
            observer.send(.head(HTTPResponseHead(
                url: request.urlRequest.url!, statusCode: 200,
                fields: [HTTPField(name: "Cache-Control", value: "max-age=600"), HTTPField(name: "Content-Length", value: "\(bytes)")]
            )))
            for index in 0..<(bytes / 65536) {
                observer.send(.body(Data(repeating: UInt8(truncatingIfNeeded: index), count: 65536)))
            }
            observer.finish()
            return nil
        }
    }
}

func streamingChildRun(mebibytes: Int) async throws {
    let folder = scratchFolder("streaming")
    defer { try? FileManager.default.removeItem(at: folder) }
    let bytes = mebibytes << 20
    let cache = HTTPCache(records: try DiskCache(directory: folder, configuration: .init(sizeLimit: bytes + (64 << 20))))
    let transport = GeneratedTransport(bytes: bytes).caching(in: cache)
    let request = TransportRequest(URLRequest(url: URL(string: "https://example.com/big")!))
    for pass in ["download", "serve"] {
        let start = ContinuousClock.now
        var received = 0
        for try await part in transport.exchange(request).values {
            if case .body(let chunk) = part { received += chunk.count }
        }
        precondition(received == bytes)
        print("\(pass) \(seconds(ContinuousClock.now - start)) \(peakResidentKiB())")
    }
}

if let streamingChild {
    try await streamingChildRun(mebibytes: streamingChild)
    exit(0)
}

// MARK: - Run

func recordsWorkload(count: Int, repetitions: Int, filter: String?) {
    let contenders: [any RecordStore] = [DiskCacheStore(), URLCacheStore(memoryCapacity: 0), URLCacheStore(memoryCapacity: 256 << 20)]
        .filter { filter == nil || $0.name.contains(filter!) }
    print("Small records: \(count) per run, \(repetitions) repetitions, medians; folders in \(scratchRoot)")
    print("")
    print("| contender | record size | writes/s | reads/s | hit latency median (µs) | hit latency p99 (µs) |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in sizes {
        var runs: [String: [RecordRun]] = [:]
        for _ in 0..<repetitions {
            for contender in contenders {
                runs[contender.name, default: []].append(runRecords(contender, size: size, count: count))
            }
        }
        for contender in contenders {
            let results = runs[contender.name]!
            let writes = median(results.map(\.writesPerSecond))
            let reads = median(results.map(\.readsPerSecond))
            let latencyMedian = median(results.map { median($0.hitLatencies) }) * 1e6
            let latencyP99 = median(results.map { percentile($0.hitLatencies, 0.99) }) * 1e6
            print("| \(contender.name) | \(size / 1024) KiB | \(format(writes)) | \(format(reads)) | \(format(latencyMedian, decimals: 1)) | \(format(latencyP99, decimals: 1)) |")
        }
    }
    print("")
}

func revalidationWorkload(requests: Int) async throws {
    let (full, revalidated) = try await revalidationBenchmark(requests: requests)
    print("Revalidation over loopback, 1 MiB body, \(requests) requests each:")
    print("")
    print("| request | median (ms) | p99 (ms) |")
    print("|---|---:|---:|")
    print("| full download (URLSessionTransport, no cache) | \(format(median(full) * 1000, decimals: 2)) | \(format(percentile(full, 0.99) * 1000, decimals: 2)) |")
    print("| revalidated: 304, body from the HTTP cache | \(format(median(revalidated) * 1000, decimals: 2)) | \(format(percentile(revalidated, 0.99) * 1000, decimals: 2)) |")
    print("")
}

func streamingWorkload(mebibytes: Int) throws {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--streaming-child", "\(mebibytes)"]
    let pipe = Pipe()
    child.standardOutput = pipe
    try child.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    child.waitUntilExit()
    print("Streaming \(mebibytes) MiB through the HTTP cache (child process):")
    print("")
    print("| pass | seconds | MiB/s | peak resident memory (MiB) |")
    print("|---|---:|---:|---:|")
    for line in output.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count == 3, let time = Double(fields[1]), let peak = Double(fields[2]) else { continue }
        print("| \(fields[0]) | \(format(time, decimals: 2)) | \(format(Double(mebibytes) / time)) | \(format(peak / 1024, decimals: 1)) |")
    }
    print("")
}

if only == nil || only == "records" { recordsWorkload(count: recordCount, repetitions: repetitions, filter: contenderFilter) }
if only == nil || only == "revalidation" { try await revalidationWorkload(requests: revalidationRequests) }
if only == nil || only == "streaming" { try streamingWorkload(mebibytes: streamingMiB) }
print("(checksum \(checksum))")
