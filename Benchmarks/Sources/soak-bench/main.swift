// soak-bench: resident memory of a client over a long run of mixed requests, against nginx on
// loopback (Benchmarks/nginx/nginx.sh starts and stops it).
//
//     swift build -c release --package-path Benchmarks --product soak-bench
//     nice -n 10 Benchmarks/.build/release/soak-bench [--requests N] [--runs R] [--cases a,b,c]
//
// The mix, the same for every contender (a stateless pseudo-random function of the request's
// index, so the same request gets the same kind and delay whatever the concurrency does):
// 80 % `GET /json` (200, a ~14 KB JSON file), 5 % `GET /missing` (404), 5 % a GET to a closed
// loopback port (connection refused), 10 % `GET /json` cancelled 0–3 ms after it started. 64 in
// flight. Each contender runs in its own process (this executable with `--case NAME`), so its
// resident memory is its own. Every 25,000 requests the driver lets the 64 in flight end, reads
// VmRSS and the C heap in use (`mallinfo2`: bytes in allocated chunks, every arena), and goes
// on; at the end it reads them again, after 5 s idle, and after `malloc_trim(0)` (what glibc
// gives back when asked: the difference between RSS and live heap that is only free chunks).
//
// Contenders:
//   urlsession           raw URLSession, one session with completion handlers, configured as
//                        `URLSessionTransport.defaultConfiguration` (no cookies, no URLCache)
//   urlsession-delegate  raw URLSession, one session with a data delegate and per-task state in
//                        a locked dictionary keyed by task identifier (the transport's shape)
//   transport            Transit's bare transport: `URLSessionTransport().send(request)`
//   client               Transit `HTTPClient(transport: URLSessionTransport())` through a RESTAPI
//                        service's `get(endpoint:)`, as a user writes it
//   NAME+fix             NAME with `--curl-fix LIBRARY` preloaded into its process: Benchmarks/soak/
//                        curl-host-fix.c, Foundation's CFURLSessionCurlHostIsEqual without its leak
import BenchSupport
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import SoakMalloc
import Synchronization
import Transit

// MARK: - Options

struct Options {
    var requests = 300_000
    var inFlight = 64
    var checkpoint = 25_000
    var idleSeconds = 5
    var runs = 1
    var cases = ["urlsession", "transport", "client"]
    var caseName: String?
    var url: String?
    var refusedPort: Int?
    /// A shared library preloaded (`LD_PRELOAD`) into the child of a case named `NAME+fix`.
    var curlFix: String?
}

func usage() -> Never {
    FileHandle.standardError.write(Data("""
    usage: soak-bench [--requests N] [--in-flight N] [--checkpoint N] [--idle SECONDS] [--runs R]
                      [--cases urlsession,urlsession-delegate,transport,client] [--url http://127.0.0.1:PORT]
                      [--curl-fix LIBRARY]   (cases NAME+fix run NAME with LIBRARY preloaded)
           soak-bench --case NAME --url URL --refused-port PORT [--requests N] ...   (one contender, in this process)
    Without --url, nginx is started with nginx/nginx.sh and stopped at the end.

    """.utf8))
    exit(2)
}

let options: Options = {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    func text() -> String {
        guard let value = arguments.popFirst() else { usage() }
        return value
    }
    func number() -> Int {
        guard let value = Int(text()), value > 0 else { usage() }
        return value
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--requests": options.requests = number()
        case "--in-flight": options.inFlight = number()
        case "--checkpoint": options.checkpoint = number()
        case "--idle": options.idleSeconds = number()
        case "--runs": options.runs = number()
        case "--cases": options.cases = text().split(separator: ",").map(String.init)
        case "--case": options.caseName = text()
        case "--url": options.url = text()
        case "--refused-port": options.refusedPort = number()
        case "--curl-fix": options.curlFix = text()
        default: usage()
        }
    }
    return options
}()

/// Prints a line at once (stdout is block-buffered into a pipe).
func print(_ line: String = "") {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func note(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// The nginx this run started, stopped by ``fail(_:)`` and on SIGINT/SIGTERM too.
nonisolated(unsafe) var startedServer: NginxServer?

func fail(_ message: String) -> Never {
    note("soak-bench: \(message)")
    startedServer?.stop()
    exit(1)
}

// MARK: - Memory


/// The C heap in use, in KiB: bytes in allocated chunks of every arena plus mmapped chunks
/// (glibc's `mallinfo2`); -1 where there is no glibc.
func heapInUseKiB() -> Int {
    let bytes = soak_heap_in_use()
    return bytes < 0 ? -1 : Int(bytes / 1024)
}

func trimHeap() {
    soak_heap_trim()
}

// MARK: - The mix

enum Kind: Int, CaseIterable {
    case ok, notFound, refused, cancelled
}

/// SplitMix64 of `index`: the same kind and cancel delay for request `index` in every contender.
func plan(_ index: Int) -> (kind: Kind, cancelAfterMicroseconds: Int) {
    var z = UInt64(truncatingIfNeeded: index) &+ 0x5EED_0000_0000_0001
    z = z &* 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    let percent = Int(z % 100)
    let kind: Kind = percent < 80 ? .ok : percent < 85 ? .notFound : percent < 90 ? .refused : .cancelled
    return (kind, Int((z >> 32) % 3_001))
}

/// How a request ended, as its contender saw it.
enum Outcome: Int, CaseIterable {
    /// 200 with the whole body.
    case ok
    /// 404.
    case notFound
    /// Failed: connection refused.
    case refused
    /// Cancelled by the driver before it ended.
    case cancelled
    /// Ended (any way) before its cancellation came.
    case endedBeforeCancel
    /// Anything else: a defect of the contender or of the run.
    case unexpected
}

/// One contender's way to start a request of a kind; it must call `done` exactly once.
protocol SoakContender: Sendable {
    func start(_ kind: Kind, cancelAfter microseconds: Int, done: @escaping @Sendable (Outcome) -> Void)
}

let cancelQueue = DispatchQueue(label: "soak.cancel", attributes: .concurrent)

func afterMicroseconds(_ microseconds: Int, _ work: @escaping @Sendable () -> Void) {
    cancelQueue.asyncAfter(deadline: .now() + .microseconds(microseconds), execute: work)
}

/// Calls `done` once, whichever of the end and the cancellation comes first.
final class Once: Sendable {
    private let fired = Atomic<Bool>(false)
    private let done: @Sendable (Outcome) -> Void
    init(_ done: @escaping @Sendable (Outcome) -> Void) { self.done = done }
    /// Whether this call was the first.
    @discardableResult
    func callAsFunction(_ outcome: Outcome) -> Bool {
        guard !fired.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        done(outcome)
        return true
    }
}

// MARK: - Contenders

struct Targets: Sendable {
    let json: URL
    let missing: URL
    let refused: URL
    let base: String
    let refusedBase: String

    init(base: String, refusedPort: Int) {
        self.base = base
        refusedBase = "http://127.0.0.1:\(refusedPort)"
        json = URL(string: base + "/json")!
        missing = URL(string: base + "/missing")!
        refused = URL(string: refusedBase + "/json")!
    }

    func url(_ kind: Kind) -> URL {
        switch kind {
        case .ok, .cancelled: json
        case .notFound: missing
        case .refused: refused
        }
    }
}

func isRefused(_ error: any Error) -> Bool {
    if let error = error as? TransportError { return isRefused(error.underlying) }
    if let error = error as? URLError { return error.code == .cannotConnectToHost }
    let nsError = error as NSError
    if nsError.domain == NSURLErrorDomain { return nsError.code == URLError.cannotConnectToHost.rawValue }
    if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? any Error { return isRefused(underlying) }
    return String(describing: error).contains("cannotConnectToHost")
}

func outcome(status: Int?, bodyCount: Int, error: (any Error)?) -> Outcome {
    if let error {
        if isRefused(error) { return .refused }
        if (error as? URLError)?.code == .cancelled { return .cancelled }
        note("unexpected failure: \(error)")
        return .unexpected
    }
    switch status {
    case 200 where bodyCount > 10_000: return .ok
    case 404: return .notFound
    default: return .unexpected
    }
}

/// Raw URLSession with completion handlers.
struct URLSessionContender: SoakContender {
    let session = URLSession(configuration: URLSessionTransport.defaultConfiguration)
    let targets: Targets

    func start(_ kind: Kind, cancelAfter microseconds: Int, done: @escaping @Sendable (Outcome) -> Void) {
        let once = Once(done)
        let task = session.dataTask(with: URLRequest(url: targets.url(kind))) { data, response, error in
            let result = outcome(status: (response as? HTTPURLResponse)?.statusCode, bodyCount: data?.count ?? 0, error: error)
            once(kind == .cancelled && result != .cancelled ? .endedBeforeCancel : result)
        }
        task.resume()
        if kind == .cancelled { afterMicroseconds(microseconds) { task.cancel() } }
    }
}

/// Raw URLSession with a data delegate: per-task state keyed by task identifier.
final class DelegateContender: NSObject, SoakContender, URLSessionDataDelegate, Sendable {
    private let tasks = Mutex<[Int: (kind: Kind, body: Data, once: Once)]>([:])
    nonisolated(unsafe) private var session: URLSession!
    let targets: Targets

    init(targets: Targets) {
        self.targets = targets
        super.init()
        session = URLSession(configuration: URLSessionTransport.defaultConfiguration, delegate: self, delegateQueue: nil)
    }

    func start(_ kind: Kind, cancelAfter microseconds: Int, done: @escaping @Sendable (Outcome) -> Void) {
        let task = session.dataTask(with: URLRequest(url: targets.url(kind)))
        tasks.withLock { $0[task.taskIdentifier] = (kind, Data(), Once(done)) }
        task.resume()
        if kind == .cancelled { afterMicroseconds(microseconds) { task.cancel() } }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        tasks.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let result = outcome(status: (task.response as? HTTPURLResponse)?.statusCode, bodyCount: entry.body.count, error: error)
        entry.once(entry.kind == .cancelled && result != .cancelled ? .endedBeforeCancel : result)
    }
}

/// A request through a Transit signal: the token is held until the request ends; a cancelled
/// request ends when its token is cancelled (no event follows a cancellation).
final class SignalRequest: Sendable {
    private let token = Mutex<CancellationToken?>(CancellationToken())
    private let once: Once

    init(kind: Kind, cancelAfter microseconds: Int, signal: Signal<HTTPResponse, any Error>, done: @escaping @Sendable (Outcome) -> Void) {
        once = Once(done)
        guard let token = token.withLock({ $0 }) else { return }
        signal.observe(Observer { [self] event in
            let result: Outcome
            switch event {
            case .value(let response): result = outcome(status: response.statusCode, bodyCount: response.data.count, error: nil)
            case .failed(let error): result = outcome(status: nil, bodyCount: 0, error: error)
            case .finished: return
            }
            end(kind == .cancelled ? .endedBeforeCancel : result)
        }, in: token)
        if kind == .cancelled {
            afterMicroseconds(microseconds) { [self] in
                let token = self.token.withLock { $0 }
                token?.cancel()
                end(.cancelled)
            }
        }
    }

    private func end(_ outcome: Outcome) {
        guard once(outcome) else { return }
        // The token is released with the request: releasing it cancels, a no-op once it ended.
        let token = token.withLock { slot in
            defer { slot = nil }
            return slot
        }
        _ = token
    }
}

/// Transit's bare transport: `URLSessionTransport.send` (the exchange collected).
struct TransportContender: SoakContender {
    let transport = URLSessionTransport()
    let targets: Targets

    func start(_ kind: Kind, cancelAfter microseconds: Int, done: @escaping @Sendable (Outcome) -> Void) {
        _ = SignalRequest(kind: kind, cancelAfter: microseconds, signal: transport.send(URLRequest(url: targets.url(kind))), done: done)
    }
}

/// A service as a user writes it: a RESTAPI with a client.
struct SoakService: RESTAPI {
    let baseURL: String
    let client: HTTPClient

    var json: Signal<HTTPResponse, any Error> {
        return get(endpoint: "json")
    }

    var missing: Signal<HTTPResponse, any Error> {
        return get(endpoint: "missing")
    }
}

/// Transit `HTTPClient` through RESTAPI `get`; the refused requests go to a second service (a
/// closed port) on the same client.
struct ClientContender: SoakContender {
    let service: SoakService
    let refusedService: SoakService

    init(targets: Targets) {
        let client = HTTPClient(transport: URLSessionTransport())
        service = SoakService(baseURL: targets.base, client: client)
        refusedService = SoakService(baseURL: targets.refusedBase, client: client)
    }

    func start(_ kind: Kind, cancelAfter microseconds: Int, done: @escaping @Sendable (Outcome) -> Void) {
        let signal = switch kind {
        case .ok, .cancelled: service.json
        case .notFound: service.missing
        case .refused: refusedService.json
        }
        _ = SignalRequest(kind: kind, cancelAfter: microseconds, signal: signal, done: done)
    }
}

func makeContender(_ name: String, targets: Targets) -> any SoakContender {
    switch name {
    case "urlsession": URLSessionContender(targets: targets)
    case "urlsession-delegate": DelegateContender(targets: targets)
    case "transport": TransportContender(targets: targets)
    case "client": ClientContender(targets: targets)
    default: fail("unknown case \(name)")
    }
}

// MARK: - One contender, in this process

/// Runs the soak and prints, one a line: `S requests rssKiB heapKiB` per checkpoint (the first at
/// 0 requests), `I rssKiB heapKiB` after idle, `T rssKiB heapKiB` after `malloc_trim`,
/// `P peakKiB`, `C` and the count of each ``Outcome``, `E seconds`.
func runCase(_ name: String, base: String, refusedPort: Int) {
    let contender = makeContender(name, targets: Targets(base: base, refusedPort: refusedPort))
    let slots = DispatchSemaphore(value: options.inFlight)
    let counts = Mutex([Int](repeating: 0, count: Outcome.allCases.count))
    let unexpectedShown = Atomic<Int>(0)
    func sample(_ completed: Int) {
        print("S \(completed) \(procStatusKiB("VmRSS")) \(heapInUseKiB())")
    }
    /// Waits for every request in flight to end, then gives the slots back.
    func drain() {
        for _ in 0..<options.inFlight { slots.wait() }
        for _ in 0..<options.inFlight { slots.signal() }
    }
    sample(0)
    let started = ContinuousClock.now
    for index in 0..<options.requests {
        if index > 0, index % options.checkpoint == 0 {
            drain()
            sample(index)
        }
        slots.wait()
        let (kind, delay) = plan(index)
        contender.start(kind, cancelAfter: delay) { outcome in
            counts.withLock { $0[outcome.rawValue] += 1 }
            if outcome == .unexpected, unexpectedShown.add(1, ordering: .relaxed).newValue <= 5 {
                note("\(name): request \(index) (\(kind)) ended unexpectedly")
            }
            slots.signal()
        }
    }
    drain()
    let elapsed = ContinuousClock.now - started
    sample(options.requests)
    Thread.sleep(forTimeInterval: Double(options.idleSeconds))
    print("I \(procStatusKiB("VmRSS")) \(heapInUseKiB())")
    trimHeap()
    print("T \(procStatusKiB("VmRSS")) \(heapInUseKiB())")
    print("P \(procStatusKiB("VmHWM"))")
    print("C " + counts.withLock { $0 }.map(String.init).joined(separator: " "))
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    print("E \(seconds)")
    withExtendedLifetime(contender) {}
}

// MARK: - The server and the closed port


/// A loopback port nobody listens on, below Linux's ephemeral range (so no outgoing connection
/// takes it): found by binding it, then closed again.
func closedLoopbackPort() -> Int {
    for attempt in 0..<200 {
        let port = 20_000 + (attempt * 7_919 + Int(getpid())) % 12_000
        #if os(Linux)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { continue }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound == 0 { return port }
    }
    fail("no closed loopback port found")
}

// MARK: - The parent: each contender in its own process

struct CaseResult {
    var samples: [(requests: Int, rss: Int, heap: Int)] = []
    var idle = (rss: 0, heap: 0)
    var trimmed = (rss: 0, heap: 0)
    var peak = 0
    var counts: [Int] = []
    var seconds = 0.0
}

func runCaseInChild(_ name: String, base: String, refusedPort: Int) -> CaseResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).absoluteURL
    if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
        process.executableURL = Bundle.main.executableURL
    }
    var caseName = name
    if name.hasSuffix("+fix") {
        guard let library = options.curlFix else { fail("\(name) needs --curl-fix LIBRARY") }
        caseName = String(name.dropLast(4))
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = library
        process.environment = environment
    }
    process.arguments = [
        "--case", caseName, "--url", base, "--refused-port", String(refusedPort),
        "--requests", String(options.requests), "--in-flight", String(options.inFlight),
        "--checkpoint", String(options.checkpoint), "--idle", String(options.idleSeconds),
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { fail("cannot start \(name): \(error)") }
    var result = CaseResult()
    var pending = Data()
    func take(_ line: Substring) {
        let fields = line.split(separator: " ")
        guard let tag = fields.first else { return }
        let numbers = fields.dropFirst().compactMap { Double($0) }
        switch tag {
        case "S" where numbers.count == 3:
            result.samples.append((Int(numbers[0]), Int(numbers[1]), Int(numbers[2])))
            note("  \(name): \(Int(numbers[0])) requests, RSS \(Int(numbers[1])) KiB, heap in use \(Int(numbers[2])) KiB")
        case "I" where numbers.count == 2: result.idle = (Int(numbers[0]), Int(numbers[1]))
        case "T" where numbers.count == 2: result.trimmed = (Int(numbers[0]), Int(numbers[1]))
        case "P" where numbers.count == 1: result.peak = Int(numbers[0])
        case "C": result.counts = numbers.map { Int($0) }
        case "E" where numbers.count == 1: result.seconds = numbers[0]
        default: note("  \(name): \(line)")
        }
    }
    let handle = pipe.fileHandleForReading
    while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            take(Substring(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)))
            pending.removeSubrange(pending.startIndex...newline)
        }
    }
    process.waitUntilExit()
    guard process.terminationStatus == 0, result.samples.count >= 2, result.counts.count == Outcome.allCases.count
    else { fail("case \(name) failed (status \(process.terminationStatus))") }
    return result
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Least-squares slope of `values` (KiB) over `requests`, in KiB per 1,000 requests.
func slopePerThousand(_ points: [(requests: Int, value: Int)]) -> Double {
    guard points.count >= 2 else { return .nan }
    let n = Double(points.count)
    let meanX = points.map { Double($0.requests) }.reduce(0, +) / n
    let meanY = points.map { Double($0.value) }.reduce(0, +) / n
    var numerator = 0.0, denominator = 0.0
    for point in points {
        numerator += (Double(point.requests) - meanX) * (Double(point.value) - meanY)
        denominator += (Double(point.requests) - meanX) * (Double(point.requests) - meanX)
    }
    return numerator / denominator * 1_000
}

/// The requests after which growth is measured: the first 50,000 (or a sixth of a shorter run)
/// fill pools, caches and the allocator's arenas.
let warmUp = options.requests >= 150_000 ? 50_000 : options.requests / 6 / options.checkpoint * options.checkpoint

func fmt(_ value: Double, _ digits: Int = 1) -> String {
    guard value.isFinite else { return "–" }
    return String(format: "%.\(digits)f", value)
}

func mib(_ kib: Double) -> String { fmt(kib / 1024, 1) }

let labels = [
    "urlsession": "raw URLSession (completion handlers, one session)",
    "urlsession-delegate": "raw URLSession (data delegate, one session)",
    "transport": "Transit URLSessionTransport.send (bare transport)",
    "client": "Transit HTTPClient, RESTAPI get",
]

func label(_ name: String) -> String {
    guard name.hasSuffix("+fix") else { return labels[name] ?? name }
    return (labels[String(name.dropLast(4))] ?? name) + ", Foundation's URL-parsing leak fixed (preloaded)"
}

func report(_ results: [String: [CaseResult]]) {
    let checkpoints = results.values.first!.first!.samples.map(\.requests)
    let columns = checkpoints.filter { $0 == 0 || $0 % 100_000 == 0 || $0 == options.requests }
    print("\nRSS in MiB (median of \(options.runs) run\(options.runs == 1 ? "" : "s")); growth: least-squares slope over the checkpoints from \(warmUp) requests to the end.\n")
    print("| contender | " + columns.map { $0 == 0 ? "start" : "\($0 / 1000)k" }.joined(separator: " | ")
          + " | after \(options.idleSeconds) s idle | after malloc_trim | peak (VmHWM) | RSS KiB per 1,000 requests | heap KiB per 1,000 requests | heap in use at end, MiB | requests/s |")
    print("|---|" + columns.map { _ in "---:" }.joined(separator: "|") + "|---:|---:|---:|---:|---:|---:|---:|")
    for name in options.cases {
        guard let runs = results[name] else { continue }
        func at(_ requests: Int) -> Double {
            median(runs.map { run in Double(run.samples.first { $0.requests == requests }?.rss ?? -1) })
        }
        let rssSlope = median(runs.map { run in slopePerThousand(run.samples.filter { $0.requests >= warmUp }.map { ($0.requests, $0.rss) }) })
        let heapSlope = median(runs.map { run in slopePerThousand(run.samples.filter { $0.requests >= warmUp }.map { ($0.requests, $0.heap) }) })
        let heapEnd = median(runs.map { Double($0.samples.last!.heap) })
        let rate = median(runs.map { Double(options.requests) / $0.seconds })
        print("| \(label(name)) | " + columns.map { mib(at($0)) }.joined(separator: " | ")
              + " | \(mib(median(runs.map { Double($0.idle.rss) }))) | \(mib(median(runs.map { Double($0.trimmed.rss) }))) | \(mib(median(runs.map { Double($0.peak) }))) | \(fmt(rssSlope, 3)) | \(fmt(heapSlope, 3)) | \(mib(heapEnd)) | \(fmt(rate, 0)) |")
    }
    print("\nOutcomes (first run of each; ok / 404 / refused / cancelled / ended before its cancel / unexpected):\n")
    for name in options.cases {
        guard let run = results[name]?.first else { continue }
        print("- \(label(name)): " + run.counts.map(String.init).joined(separator: " / "))
    }
    print("\nEvery checkpoint, every run (requests: RSS KiB / heap in use KiB):\n")
    for name in options.cases {
        for (number, run) in (results[name] ?? []).enumerated() {
            print("- \(name) run \(number + 1): " + run.samples.map { "\($0.requests): \($0.rss)/\($0.heap)" }.joined(separator: ", ")
                  + "; idle \(run.idle.rss)/\(run.idle.heap); trimmed \(run.trimmed.rss)/\(run.trimmed.heap); peak \(run.peak); \(fmt(run.seconds, 1)) s")
        }
    }
}

// MARK: - Main

if let name = options.caseName {
    guard let base = options.url, let refusedPort = options.refusedPort else { usage() }
    runCase(name, base: base, refusedPort: refusedPort)
    exit(0)
}

signal(SIGPIPE, SIG_IGN)
let server: NginxServer? = options.url == nil ? NginxServer(failingWith: fail) : nil
startedServer = server
let base = options.url ?? "http://127.0.0.1:\(server!.port)"
let refusedPort = closedLoopbackPort()
let stopSignals: [any DispatchSourceSignal] = [SIGINT, SIGTERM].map { (number: Int32) -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        server?.stop()
        exit(128 + number)
    }
    source.resume()
    return source
}

let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
    .split(separator: "\n").first { $0.hasPrefix("model name") }?
    .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown"
print("## soak-bench: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), server \(base) (nginx), refused port \(refusedPort)")
print("\(options.requests) requests, \(options.inFlight) in flight, \(options.runs) run(s) of \(options.cases.joined(separator: ", ")) (one process each, rotating order)")
var loadAverage = [0.0, 0.0, 0.0]
getloadavg(&loadAverage, 3)
print("Load average at start: \(loadAverage.map { fmt($0, 2) }.joined(separator: " "))")
var results = [String: [CaseResult]]()
for run in 0..<options.runs {
    for offset in 0..<options.cases.count {
        let name = options.cases[(run + offset) % options.cases.count]
        note("run \(run + 1), \(name)")
        results[name, default: []].append(runCaseInChild(name, base: base, refusedPort: refusedPort))
    }
}
report(results)
getloadavg(&loadAverage, 3)
print("\nLoad average at end: \(loadAverage.map { fmt($0, 2) }.joined(separator: " "))")
server?.stop()
withExtendedLifetime(stopSignals) {}
