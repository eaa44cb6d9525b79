// transport-bench: Transit's transport and request chain against raw URLSession, on one machine,
// against nginx on loopback (Benchmarks/nginx/nginx.sh starts and stops it).
//
//     cd Benchmarks && swift run -c release transport-bench [--repetitions N] [--quick]
//
// 1. Requests per second on a ~14 KB JSON body, at 1 and at 32 requests in flight:
//    raw URLSession (completion handler, one shared session), Transit's bare transport
//    (`URLSessionTransport.send`: the exchange collected), `HTTPClient.send`, and the README's
//    PostService chain (RESTAPI get + bearer-token modifier + catchHTTPErrors +
//    retryWithFreshToken + respondToRateLimiting + map(\.data)). Every contender sends the same
//    request (the same URL, `Authorization` and `Accept` headers).
// 2. A 1 GiB body: downloaded to a file (`HTTPClient.download` against a URLSession
//    `downloadTask`) and streamed through a hash of every chunk (`HTTPClient.stream` against a
//    URLSession data delegate). Each run is its own process (this executable with `--case`), so
//    peak resident memory (VmHWM) is that case's alone.
//
// Contenders run in rounds: each runs once per round, in a rotating order. Ratios are taken within
// a round (so load that drifts between rounds hits both sides alike), then their median is shown,
// with the client's CPU time per request (or per GiB), which depends far less on other load.
import BenchSupport
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization
import Transit

// MARK: - Configuration

struct Options {
    var url: String?
    /// Rounds of the requests-per-second workload (each contender runs once per round).
    var repetitions = 15
    var requestsPerRun = [1: 400, 32: 1_200]
    var bigRuns: Int?
    var caseName: String?
    var folder: String?
    var profile: String?
    /// The contenders of the requests-per-second workload (`--contenders a,b`); every one when nil.
    var contenderKeys: Set<String>?
    var profileRequests = 2_000
    var profileConcurrency = 1
    var skipRequests = false
    var skipBodies = false
    var resumed = false
}

func usage() -> Never {
    print("""
    usage: transport-bench [--repetitions N] [--big-runs N] [--quick] [--requests N]
                           [--url http://127.0.0.1:PORT] [--only requests|bodies|resumed]
                           [--contenders KEY,KEY…] (raw always runs)
           transport-bench --profile raw|raw-plain|delegate|transport|client|chain|policies|ahc-raw|ahc-exchange|ahc-chain|ahc-policies|ahc-declared|ahc-observed|mem-chain|mem-policies|mem-declared|mem-declared-counted|mem-observed|mem-signal|mem-urlrequest|mem-urlrequest-consume --url URL [--requests N] [--concurrency C]
    Without --url, nginx is started with nginx/nginx.sh and stopped at the end.
    """)
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
        guard let value = Int(text()) else { usage() }
        return value
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--url": options.url = text()
        case "--repetitions": options.repetitions = number()
        case "--requests":
            let count = number()
            options.requestsPerRun = [1: count, 32: count * 2]
            options.profileRequests = count
        case "--concurrency": options.profileConcurrency = number()
        case "--quick":
            options.repetitions = 5
            options.bigRuns = 3
            options.requestsPerRun = [1: 200, 32: 600]
        case "--big-runs": options.bigRuns = number()
        case "--only":
            switch arguments.popFirst() {
            case "requests": options.skipBodies = true
            case "bodies": options.skipRequests = true
            case "resumed": (options.skipRequests, options.skipBodies, options.resumed) = (true, true, true)
            default: usage()
            }
        case "--case": options.caseName = text()
        case "--folder": options.folder = text()
        case "--profile": options.profile = text()
        case "--contenders": options.contenderKeys = Set(text().split(separator: ",").map(String.init))
        default: usage()
        }
    }
    return options
}()

/// The nginx this run started, stopped by ``fail(_:)`` and on SIGINT/SIGTERM too.
nonisolated(unsafe) var startedServer: NginxServer?

/// Prints a line at once (stdout is block-buffered into a pipe; progress should show as it comes).
func print(_ line: String = "") {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("transport-bench: \(message)\n".utf8))
    startedServer?.stop()
    exit(1)
}

// MARK: - Memory and hashing


/// CPU time (user + system, all threads) this process has used so far, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) * 1e-6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// FNV-1a over little-endian 64-bit words (a cheap hash that touches every byte), independent of
/// how the body is cut into chunks: bytes left over from one chunk are completed by the next.
struct BodyHasher: Sendable {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325
    private var pending: UInt64 = 0
    private var pendingCount = 0
    private(set) var byteCount = 0

    private mutating func mix(_ word: UInt64) {
        state = (state ^ word) &* 0x0000_0100_0000_01b3
    }

    mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        byteCount += count
        var index = 0
        if pendingCount > 0 {
            while pendingCount < 8, index < count {
                pending |= UInt64(bytes[index]) << (8 * pendingCount)
                pendingCount += 1
                index += 1
            }
            guard pendingCount == 8 else { return }
            mix(pending)
            pending = 0
            pendingCount = 0
        }
        while index + 8 <= count {
            mix(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        while index < count {
            pending |= UInt64(bytes[index]) << (8 * pendingCount)
            pendingCount += 1
            index += 1
        }
    }

    /// The hash of everything seen, the length included.
    var value: UInt64 {
        var copy = self
        if copy.pendingCount > 0 { copy.mix(copy.pending) }
        copy.mix(UInt64(byteCount))
        return copy.state
    }
}

// MARK: - The server


// MARK: - Requests per second

let bearerToken = "bench-access-token-0123456789abcdef"

/// The request every contender sends: what the chain's modifier produces.
func jsonRequest(_ url: URL) -> URLRequest {
    var request = URLRequest(url: url)
    request.setValue("Bearer \(bearerToken)", forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Accept")
    return request
}

/// The README's PostService, minus the decoding: RESTAPI get with a bearer-token modifier,
/// catchHTTPErrors, retryWithFreshToken, respondToRateLimiting, map(\.data).
struct BenchPostService: RESTAPI {
    let baseURL: String
    let client: HTTPClient
    let tokens: TokenStore

    var posts: Signal<Data, any Error> {
        return get(endpoint: "json") { request in
            try request
                .addingBearerAuthorization(accessToken: tokens.current.accessToken)
                .receivingJSON()
        }
        .catchHTTPErrors()
        .retryWithFreshToken(from: tokens)
        .respondToRateLimiting(maxWait: .seconds(5))
        .map(\.data)
    }
}

/// The same service with every policy declared once on its client instead of in the chain: a
/// client-side rate limiter (set far above the benchmark's rate, so it never makes a request
/// wait: what is measured is its bookkeeping), shared cooldowns, host failover to a second origin
/// (never needed here: its cost is the health check per attempt), the token store as the client's
/// authoriser (credentials added by the client, 401 renewed once), and a retry policy with a
/// client-wide retry budget. Request coalescing is left off: with identical GETs in flight it
/// changes the workload itself (32 concurrent requests become one), so it is not a cost to compare.
/// The request with everything declared on the client (authoriser, default headers): a verb, the
/// errors and the body, no per-call modifier.
struct BenchDeclaredService: RESTAPI {
    let baseURL: String
    let client: HTTPClient

    var posts: Signal<Data, any Error> {
        self.get(endpoint: "json").catchHTTPErrors().map(\.data)
    }
}

struct BenchPolicyService: RESTAPI {
    let baseURL: String
    let client: HTTPClient
    let retryPolicy: RetryPolicy?

    /// Whether the client adds the token; without its authoriser the chain adds it, as the README
    /// chain does, so every variant sends the same request.
    let clientAuthorizes: Bool

    var posts: Signal<Data, any Error> {
        let clientAuthorizes = clientAuthorizes
        var signal = get(endpoint: "json") { request in
            clientAuthorizes ? request.receivingJSON() : try request.addingBearerAuthorization(accessToken: bearerToken).receivingJSON()
        }
        .catchHTTPErrors()
        if let retryPolicy { signal = signal.retry(retryPolicy, method: .get) }
        return signal
            .respondToRateLimiting(maxWait: .seconds(5))
            .map(\.data)
    }

    /// Every policy, or (for profiling one policy's cost) those named in
    /// `TRANSIT_BENCH_POLICIES`: a comma-separated list of `rate`, `cooldowns`, `failover`,
    /// `authorizer`, `retry`.
    static func make(base: String, transport: any HTTPTransport = URLSessionTransport()) -> BenchPolicyService {
        let all: Set<String> = ["rate", "cooldowns", "failover", "authorizer", "retry"]
        let named = ProcessInfo.processInfo.environment["TRANSIT_BENCH_POLICIES"].map {
            Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        let on = named ?? all
        if let unknown = on.subtracting(all).first {
            print("TRANSIT_BENCH_POLICIES: unknown policy '\(unknown)' (known: \(all.sorted().joined(separator: ", ")))")
            exit(2)
        }
        let tokens = TokenStore(
            token: AuthToken(accessToken: bearerToken),
            scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
        ) { current in Signal(value: current) }
        let client = HTTPClient(transport: transport) {
            $0.rateLimiter = on.contains("rate") ? RateLimiter(requestsPerSecond: 10_000_000, burst: 1_000_000) : nil
            $0.cooldowns = on.contains("cooldowns") ? Cooldowns() : nil
            $0.failover = on.contains("failover") ? HostFailover(origins: [base, "http://127.0.0.1:9"]) : nil
            $0.authorizer = on.contains("authorizer") ? tokens : nil
        }
        return BenchPolicyService(
            baseURL: base, client: client,
            retryPolicy: on.contains("retry") ? RetryPolicy(budget: RetryBudget()) : nil,
            clientAuthorizes: on.contains("authorizer")
        )
    }
}

/// Starts one request and calls the closure it is given, with the body's byte count (or -1 on
/// failure), when it ends.
typealias StartRequest = @Sendable (_ done: @escaping @Sendable (Int) -> Void) -> Void

/// One contender of the requests-per-second workload.
struct Contender: Sendable {
    let name: String
    let key: String
    let start: StartRequest
}

/// Keeps the token of a worker's current subscription (the previous one is released, finished,
/// when the next starts).
final class TokenSlot: Sendable {
    private let token = Mutex<CancellationToken?>(nil)
    func hold(_ new: CancellationToken) {
        let old = token.withLock { slot in
            defer { slot = new }
            return slot
        }
        _ = old
    }
}

func signalStart(_ makeSignal: @escaping @Sendable () -> Signal<Int, any Error>) -> (TokenSlot) -> StartRequest {
    { slot in
        { done in
            let token = CancellationToken()
            slot.hold(token)
            let result = Mutex(-1)
            makeSignal().observe(Observer { event in
                switch event {
                case .value(let count): result.withLock { $0 = count }
                case .finished: done(result.withLock { $0 })
                case .failed(let error):
                    FileHandle.standardError.write(Data("request failed: \(error)\n".utf8))
                    done(-1)
                }
            }, in: token)
        }
    }
}

/// Raw URLSession in delegate mode, the mode a streaming transport needs on Linux (no per-task
/// delegates): one session delegate, per-task state in a locked dictionary, the body collected
/// from `didReceive data`. What Transit's transport costs beyond this is Transit's own.
final class CollectingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let tasks = Mutex<[Int: (body: Data, done: @Sendable (Int) -> Void)]>([:])

    func start(_ request: URLRequest, on session: URLSession, done: @escaping @Sendable (Int) -> Void) {
        let task = session.dataTask(with: request)
        tasks.withLock { $0[task.taskIdentifier] = (Data(), done) }
        task.resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        tasks.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let ok = error == nil && (task.response as? HTTPURLResponse)?.statusCode == 200
        entry.done(ok ? entry.body.count : -1)
    }
}

/// The contenders, each with its own session (so none shares another's connections).
/// One request on `session` with a completion handler, checked like every contender's.
func completionHandlerStart(_ session: URLSession, _ url: URL) -> StartRequest {
    { done in
        session.dataTask(with: jsonRequest(url)) { data, response, error in
            guard error == nil, (response as? HTTPURLResponse)?.statusCode == 200, let data else {
                FileHandle.standardError.write(Data("raw request failed: \(String(describing: error))\n".utf8))
                return done(-1)
            }
            done(data.count)
        }.resume()
    }
}

func makeContenders(base: String) -> [(name: String, key: String, makeStart: (TokenSlot) -> StartRequest)] {
    let url = URL(string: base + "/json")!
    let rawSession = URLSession(configuration: .default)
    // Raw URLSession with the configuration Transit's transports use by default (no cookie jar,
    // no URLCache): the like-for-like peer of the Transit contenders below.
    let plainSession = URLSession(configuration: URLSessionTransport.defaultConfiguration)
    let collecting = CollectingDelegate()
    let delegateSession = URLSession(configuration: .default, delegate: collecting, delegateQueue: nil)
    // The Transit contenders use the transport as the README does: `URLSessionTransport()`.
    let transport = URLSessionTransport()
    let client = HTTPClient(transport: URLSessionTransport())
    let service = BenchPostService(
        baseURL: base,
        client: HTTPClient(transport: URLSessionTransport()),
        tokens: TokenStore(token: AuthToken(accessToken: bearerToken)) { current in Signal(value: current) }
    )
    let policyService = BenchPolicyService.make(base: base)
    let ahcService = asyncHTTPClientChain(base: base)
    let ahcPolicyService = asyncHTTPClientPolicies(base: base)
    let ahcDeclaredService = asyncHTTPClientDeclared(base: base)
    let ahcObservedService = asyncHTTPClientObserved(base: base)
    let ahcTransport = asyncHTTPClientTransport()
    return [
        ("raw URLSession (completion handler)", "raw", { _ in completionHandlerStart(rawSession, url) }),
        ("raw URLSession (completion handler), no cookies or URLCache", "raw-plain", { _ in completionHandlerStart(plainSession, url) }),
        ("raw URLSession (data delegate)", "delegate", { _ in
            { done in collecting.start(jsonRequest(url), on: delegateSession, done: done) }
        }),
        ("Transit transport (exchange collected)", "transport", signalStart {
            transport.send(jsonRequest(url)).tryMap { response in
                guard response.statusCode == 200 else { throw URLError(.badServerResponse) }
                return response.data.count
            }
        }),
        ("Transit HTTPClient.send", "client", signalStart {
            client.send(jsonRequest(url)).tryMap { response in
                guard response.statusCode == 200 else { throw URLError(.badServerResponse) }
                return response.data.count
            }
        }),
        ("README PostService chain", "chain", signalStart {
            service.posts.map(\.count)
        }),
        ("README service, every policy on", "policies", signalStart {
            policyService.posts.map(\.count)
        }),
        ("raw AsyncHTTPClient", "ahc-raw", { _ in rawAsyncHTTPClientStart(url: url.absoluteString) }),
        ("AsyncHTTPClient adapter (exchange collected)", "ahc-transport", signalStart {
            ahcTransport.send(jsonRequest(url)).tryMap { response in
                guard response.statusCode == 200 else { throw URLError(.badServerResponse) }
                return response.data.count
            }
        }),
        ("AsyncHTTPClient adapter, its exchange observed as it streams (no client above it)", "ahc-exchange", { slot in
            asyncHTTPClientExchangeStart(ahcTransport, url: url, slot: slot)
        }),
        ("README PostService chain on the AsyncHTTPClient adapter", "ahc-chain", signalStart {
            ahcService.posts.map(\.count)
        }),
        ("README service, every policy on, on the AsyncHTTPClient adapter", "ahc-policies", signalStart {
            ahcPolicyService.posts.map(\.count)
        }),
        ("request declared on the client (authoriser, default headers), on the AsyncHTTPClient adapter", "ahc-declared", signalStart {
            ahcDeclaredService.posts.map(\.count)
        }),
        ("README PostService chain with ObservabilityMonitor, on the AsyncHTTPClient adapter", "ahc-observed", signalStart {
            ahcObservedService.posts.map(\.count)
        }),
    ]
}

/// A transport that answers every request at once, in memory: a 200 with a 13.7 KB JSON-sized
/// body, delivered on the subscribing thread. With it a profile counts Transit's own instructions
/// only — no socket, no event loop, no other thread — so they repeat exactly from run to run,
/// and a change of a few hundred instructions per request shows.
struct InMemoryTransport: HTTPTransport {
    let body = Data(repeating: UInt8(ascii: " "), count: 13_700)

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let body = body
        let url = request.url ?? URL(string: "http://127.0.0.1/")!
        return Signal { observer in
            let head = HTTPResponseHead(url: url, statusCode: 200, fields: [
                HTTPField(name: "Content-Type", value: "application/json"),
                HTTPField(name: "Content-Length", value: "13700"),
            ])
            observer.send(.value(.head(head)))
            observer.send(.value(.body(body)))
            observer.send(.finished)
            return nil
        }
    }
}

/// The README's modifier, as the chain calls it: not inlined into its caller, so the parameter
/// lives to the function's end as a modifier closure's does.
@inline(never)
func readmeModifier(_ request: consuming URLRequest) throws -> URLRequest {
    try request.addingBearerAuthorization(accessToken: modifierTokens.current.accessToken).receivingJSON()
}

/// The same with `consume`, as the README's performance notes advise.
@inline(never)
func consumingModifier(_ request: consuming URLRequest) throws -> URLRequest {
    try (consume request).addingBearerAuthorization(accessToken: modifierTokens.current.accessToken).receivingJSON()
}

/// The token store the two modifiers above read, as the README's does.
let modifierTokens = TokenStore(token: AuthToken(accessToken: bearerToken)) { current in Signal(value: current) }

/// Contenders for `--profile` only: the README chain and the policies service on
/// ``InMemoryTransport`` (`mem-chain`, `mem-policies`), what the policies cost in instructions.
func makeInMemoryContenders(base: String) -> [(name: String, key: String, makeStart: (TokenSlot) -> StartRequest)] {
    let service = BenchPostService(
        baseURL: base,
        client: HTTPClient(transport: InMemoryTransport()),
        tokens: TokenStore(token: AuthToken(accessToken: bearerToken)) { current in Signal(value: current) }
    )
    let policyService = BenchPolicyService.make(base: base, transport: InMemoryTransport())
    let declaredService = declaredOnClient(base: base, transport: InMemoryTransport())
    let countedService = declaredOnClient(base: base, transport: InMemoryTransport(), monitors: [CountingMonitor()])
    let observedService = observedPostService(base: base, transport: InMemoryTransport())
    // What the request currency alone costs: the `URLRequest` the chain builds (from a URL
    // already built, as the client's table of built URLs gives it), the README's modifier in its
    // README spelling and with `consume`, and the reads of its method, URL and headers that the
    // client's checks and a transport's conversion make; against the same deferred signal without
    // them (`mem-signal`).
    let url = URL(string: base + "/json")!
    let readRequest: @Sendable (URLRequest) -> Int = { request in
        (request.allHTTPHeaderFields?.count ?? 0) + (request.httpMethod?.utf8.count ?? 0) + (request.url == nil ? 0 : 1)
    }
    let withRequest: (@escaping @Sendable (consuming URLRequest) throws -> URLRequest) -> (TokenSlot) -> StartRequest = { modify in
        signalStart {
            Signal(tryDeferred: {
                var request = URLRequest(url: url)
                request.httpMethod = "GET"
                let modified = try modify(consume request)
                return Signal(value: readRequest(modified) + readRequest(modified))
            })
        }
    }
    // A stream with a deadline (a stream has none unless its options set one): the parts counted.
    let streamClient = HTTPClient(transport: InMemoryTransport())
    let streamOptions = RequestOptions(deadline: .after(.seconds(300)))
    return [
        ("a stream with a deadline, in memory", "mem-stream-deadline", signalStart {
            streamClient.stream(URLRequest(url: url), options: streamOptions).map { _ in 1 }
        }),
        ("a bare deferred Signal(value:), in memory", "mem-signal", signalStart { Signal(tryDeferred: { Signal(value: 1) }) }),
        ("the chain's URLRequest, README modifier, in memory", "mem-urlrequest", withRequest(readmeModifier)),
        ("the chain's URLRequest, modifier with consume, in memory", "mem-urlrequest-consume", withRequest(consumingModifier)),
        ("the chain's URLRequest, README modifier as a closure literal, in memory", "mem-urlrequest-closure", withRequest({ request in
            try request.addingBearerAuthorization(accessToken: modifierTokens.current.accessToken).receivingJSON()
        })),
        ("the chain's URLRequest, README modifier as a closure literal declaring consuming, in memory", "mem-urlrequest-closure-consuming", withRequest({ (request: consuming URLRequest) in
            try request.addingBearerAuthorization(accessToken: modifierTokens.current.accessToken).receivingJSON()
        })),
        ("README PostService chain, in memory", "mem-chain", signalStart { service.posts.map(\.count) }),
        ("README service, every policy on, in memory", "mem-policies", signalStart { policyService.posts.map(\.count) }),
        ("request declared on the client (authoriser, default headers), in memory", "mem-declared", signalStart { declaredService.posts.map(\.count) }),
        ("README PostService chain with ObservabilityMonitor, in memory", "mem-observed", signalStart { observedService.posts.map(\.count) }),
        ("request declared on the client with a monitor that counts events, in memory", "mem-declared-counted", signalStart { countedService.posts.map(\.count) }),
    ]
}

/// Runs `requests` requests, `concurrency` at a time, and returns the elapsed time and the CPU
/// time the process used meanwhile; every body must have `expectedBytes` bytes.
func load(
    _ makeStart: (TokenSlot) -> StartRequest,
    requests: Int,
    concurrency: Int,
    expectedBytes: Int?
) -> (elapsed: Duration, cpu: Double) {
    let remaining = Atomic<Int>(requests)
    let failures = Atomic<Int>(0)
    let group = DispatchGroup()
    let workers = (0..<concurrency).map { _ in makeStart(TokenSlot()) }
    final class Loop: Sendable {
        let next: Mutex<(@Sendable () -> Void)?> = Mutex(nil)
    }
    let clock = ContinuousClock()
    let cpuBefore = processCPUSeconds()
    let started = clock.now
    for start in workers {
        group.enter()
        let loop = Loop()
        let next: @Sendable () -> Void = {
            guard remaining.subtract(1, ordering: .relaxed).newValue >= 0 else {
                loop.next.withLock { $0 = nil }  // breaks loop -> closure -> loop
                group.leave()
                return
            }
            start { bytes in
                if bytes < 0 || (expectedBytes != nil && bytes != expectedBytes) {
                    failures.add(1, ordering: .relaxed)
                }
                loop.next.withLock { $0 }?()
            }
        }
        loop.next.withLock { $0 = next }
        next()
    }
    group.wait()
    let elapsed = clock.now - started
    let cpu = processCPUSeconds() - cpuBefore
    if failures.load(ordering: .relaxed) > 0 { fail("\(failures.load(ordering: .relaxed)) requests failed or had a wrong body") }
    return (elapsed, cpu)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

func fmt(_ value: Double, _ digits: Int = 0) -> String {
    String(format: "%.\(digits)f", value)
}

func requestsPerSecond(base: String, repetitions: Int, requestsPerRun: [Int: Int]) {
    // Raw URLSession always runs: every ratio of the table is to it.
    let contenders = makeContenders(base: base).filter { options.contenderKeys?.contains($0.key) ?? true || $0.key == "raw" }
    // The body size, from one plain request.
    let expected = Mutex<Int?>(nil)
    let probe = DispatchSemaphore(value: 0)
    URLSession.shared.dataTask(with: URL(string: base + "/json")!) { data, _, _ in
        expected.withLock { $0 = data?.count }
        probe.signal()
    }.resume()
    probe.wait()
    guard let jsonBytes = expected.withLock({ $0 }) else { fail("cannot read \(base)/json") }
    print("""
    JSON body: \(jsonBytes) bytes. \(repetitions) rounds; in each round every contender runs one batch, in a \
    rotating order. Ratios are taken within a round (so load that changes between rounds hits \
    both sides of a ratio alike), then the median over the rounds is shown.

    """)

    for concurrency in [1, 32] {
        let requests = requestsPerRun[concurrency] ?? 400
        // Warm-up: connections open, code paths paged in.
        for contender in contenders {
            _ = load(contender.makeStart, requests: max(concurrency * 4, requests / 4), concurrency: concurrency, expectedBytes: jsonBytes)
        }
        var rates = [String: [Double]]()
        var cpu = [String: [Double]]()
        for round in 0..<repetitions {
            for offset in 0..<contenders.count {
                let contender = contenders[(round + offset) % contenders.count]
                let result = load(contender.makeStart, requests: requests, concurrency: concurrency, expectedBytes: jsonBytes)
                rates[contender.key, default: []].append(Double(requests) / result.elapsed.seconds)
                cpu[contender.key, default: []].append(result.cpu / Double(requests) * 1e6)
            }
        }
        print("### \(concurrency) request\(concurrency == 1 ? "" : "s") in flight (\(requests) requests per batch)\n")
        print("| contender | requests/s (median) | × raw URLSession (median of rounds) | client CPU µs per request (median) | × raw CPU (median of rounds) | requests/s, lowest – highest round |")
        print("|---|---:|---:|---:|---:|---|")
        for contender in contenders {
            let values = rates[contender.key]!
            let ratio = median(zip(values, rates["raw"]!).map { $0 / $1 })
            let cpuRatio = median(zip(cpu["raw"]!, cpu[contender.key]!).map { $0 / $1 })
            print("| \(contender.name) | \(fmt(median(values))) | \(fmt(ratio, 3)) | \(fmt(median(cpu[contender.key]!), 0)) | \(fmt(cpuRatio, 3)) | \(fmt(values.min()!)) – \(fmt(values.max()!)) |")
        }
        if let chain = rates["ahc-chain"], let raw = rates["ahc-raw"], let chainCPU = cpu["ahc-chain"], let rawCPU = cpu["ahc-raw"] {
            let ratio = median(zip(chain, raw).map { $0 / $1 })
            let cpuRatio = median(zip(rawCPU, chainCPU).map { $0 / $1 })
            print("\nThe README chain on the AsyncHTTPClient adapter against raw AsyncHTTPClient (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let exchange = rates["ahc-exchange"], let raw = rates["ahc-raw"], let exchangeCPU = cpu["ahc-exchange"], let rawCPU = cpu["ahc-raw"] {
            let ratio = median(zip(exchange, raw).map { $0 / $1 })
            let cpuRatio = median(zip(rawCPU, exchangeCPU).map { $0 / $1 })
            print("\nThe AsyncHTTPClient adapter's exchange alone, no client above it, against raw AsyncHTTPClient (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let declared = rates["ahc-declared"], let raw = rates["ahc-raw"], let declaredCPU = cpu["ahc-declared"], let rawCPU = cpu["ahc-raw"] {
            let ratio = median(zip(declared, raw).map { $0 / $1 })
            let cpuRatio = median(zip(rawCPU, declaredCPU).map { $0 / $1 })
            print("\nThe request declared on the client, on the AsyncHTTPClient adapter, against raw AsyncHTTPClient (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let chain = rates["chain"], let plain = rates["raw-plain"], let chainCPU = cpu["chain"], let plainCPU = cpu["raw-plain"] {
            let ratio = median(zip(chain, plain).map { $0 / $1 })
            let cpuRatio = median(zip(plainCPU, chainCPU).map { $0 / $1 })
            print("\nThe README chain against raw URLSession with the same configuration (no cookies or URLCache; median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let policies = rates["policies"], let chain = rates["chain"], let policiesCPU = cpu["policies"], let chainCPU = cpu["chain"] {
            let ratio = median(zip(policies, chain).map { $0 / $1 })
            let cpuRatio = median(zip(chainCPU, policiesCPU).map { $0 / $1 })
            print("\nEvery policy on against the README chain without them (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let observed = rates["ahc-observed"], let chain = rates["ahc-chain"], let observedCPU = cpu["ahc-observed"], let chainCPU = cpu["ahc-chain"] {
            let ratio = median(zip(observed, chain).map { $0 / $1 })
            let cpuRatio = median(zip(chainCPU, observedCPU).map { $0 / $1 })
            print("\nOn the AsyncHTTPClient adapter, the chain with ObservabilityMonitor against the chain without it (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        if let policies = rates["ahc-policies"], let chain = rates["ahc-chain"], let policiesCPU = cpu["ahc-policies"], let chainCPU = cpu["ahc-chain"] {
            let ratio = median(zip(policies, chain).map { $0 / $1 })
            let cpuRatio = median(zip(chainCPU, policiesCPU).map { $0 / $1 })
            print("\nOn the AsyncHTTPClient adapter, every policy on against the chain without them (median of rounds): \(fmt(ratio, 3))× the requests/s, \(fmt(cpuRatio, 3))× the CPU per request (above 1: cheaper).")
        }
        print("")
    }
}

// MARK: - 1 GiB bodies, one process per run

let bodyCases = ["download-urlsession", "download-transit", "download-transit-tasks", "stream-urlsession", "stream-transit", "stream-ahc"]

/// A URLSession data delegate that hashes every chunk.
final class HashingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    let hasher = Mutex(BodyHasher())
    let status = Mutex(0)
    let done = DispatchSemaphore(value: 0)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        hasher.withLock { $0.update(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { FileHandle.standardError.write(Data("stream failed: \(error)\n".utf8)) }
        status.withLock { $0 = error == nil ? (task.response as? HTTPURLResponse)?.statusCode ?? 0 : -1 }
        done.signal()
    }
}

/// Runs one body case in this process and prints `seconds bytes hash peakKiB baselineKiB cpuSeconds`.
func runBodyCase(_ name: String, base: String, folder: String) {
    let url = URL(string: base + "/big")!
    let destination = URL(fileURLWithPath: folder).appendingPathComponent("download-\(getpid())")
    defer { try? FileManager.default.removeItem(at: destination) }
    let baseline = procStatusKiB("VmRSS")
    let cpuBefore = processCPUSeconds()
    let clock = ContinuousClock()
    let finished = DispatchSemaphore(value: 0)
    var bytes = 0
    var hash: UInt64 = 0
    let elapsed: Duration
    switch name {
    case "download-urlsession":
        let session = URLSession(configuration: .default)
        let outcome = Mutex<Bool>(false)
        let started = clock.now
        session.downloadTask(with: url) { location, response, error in
            if let location, error == nil, (response as? HTTPURLResponse)?.statusCode == 200 {
                outcome.withLock { $0 = (try? FileManager.default.moveItem(at: location, to: destination)) != nil }
            } else {
                FileHandle.standardError.write(Data("download failed: \(String(describing: error))\n".utf8))
            }
            finished.signal()
        }.resume()
        finished.wait()
        elapsed = clock.now - started
        guard outcome.withLock({ $0 }) else { fail("URLSession download failed") }
        bytes = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? -1
    case "download-transit", "download-transit-tasks":
        let client = HTTPClient(transport: URLSessionTransport(downloadTasks: name == "download-transit-tasks"))
        let outcome = Mutex<Int64>(-1)
        let started = clock.now
        let token = client.download(URLRequest(url: url), to: destination).sink(receiveCompletion: { completion in
            if case .failure(let error) = completion {
                FileHandle.standardError.write(Data("download failed: \(error)\n".utf8))
            }
            finished.signal()
        }, receiveValue: { event in
            if case .completed(let file) = event { outcome.withLock { $0 = file.byteCount } }
        })
        finished.wait()
        elapsed = clock.now - started
        token.cancel()
        guard outcome.withLock({ $0 }) >= 0 else { fail("Transit download failed") }
        bytes = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? -1
    case "stream-urlsession":
        let delegate = HashingDelegate()
        let session = URLSession(configuration: .default, delegate: delegate, delegateQueue: nil)
        let started = clock.now
        session.dataTask(with: url).resume()
        delegate.done.wait()
        elapsed = clock.now - started
        guard delegate.status.withLock({ $0 }) == 200 else { fail("URLSession stream failed") }
        (bytes, hash) = delegate.hasher.withLock { ($0.byteCount, $0.value) }
        session.invalidateAndCancel()
    case "stream-transit", "stream-ahc":
        let client = name == "stream-ahc" ? asyncHTTPClientStreamingClient() : HTTPClient(transport: URLSessionTransport())
        let hasher = Mutex(BodyHasher())
        let status = Mutex(0)
        let started = clock.now
        let token = client.stream(URLRequest(url: url)).sink(receiveCompletion: { completion in
            if case .failure(let error) = completion {
                FileHandle.standardError.write(Data("stream failed: \(error)\n".utf8))
                status.withLock { $0 = -1 }
            }
            finished.signal()
        }, receiveValue: { part in
            switch part {
            case .head(let head): status.withLock { $0 = head.statusCode }
            case .body(let chunk): hasher.withLock { $0.update(chunk) }
            }
        })
        finished.wait()
        elapsed = clock.now - started
        token.cancel()
        guard status.withLock({ $0 }) == 200 else { fail("Transit stream failed") }
        (bytes, hash) = hasher.withLock { ($0.byteCount, $0.value) }
    default:
        fail("unknown case \(name)")
    }
    print("\(elapsed.seconds) \(bytes) \(hash) \(procStatusKiB("VmHWM")) \(baseline) \(processCPUSeconds() - cpuBefore)")
}

/// Runs `name` in a child process and parses what it prints.
func runBodyCaseInChild(_ name: String, base: String, folder: String) -> (seconds: Double, bytes: Int, hash: UInt64, peakKiB: Int, baselineKiB: Int, cpu: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).absoluteURL
    if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
        process.executableURL = Bundle.main.executableURL
    }
    process.arguments = ["--case", name, "--url", base, "--folder", folder]
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { fail("cannot start \(name): \(error)") }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    guard process.terminationStatus == 0, fields.count == 6,
          let seconds = Double(fields[0]), let bytes = Int(fields[1]), let hash = UInt64(fields[2]),
          let peak = Int(fields[3]), let baseline = Int(fields[4]), let cpu = Double(fields[5])
    else { fail("case \(name) failed: \(String(decoding: data, as: UTF8.self))") }
    return (seconds, bytes, hash, peak, baseline, cpu)
}

func largeBodies(base: String, folder: String, repetitions: Int) {
    let gib = 1 << 30
    var throughput = [String: [Double]]()
    var cpu = [String: [Double]]()
    var peaks = [String: [Int]]()
    var baselines = [String: [Int]]()
    var hashes = Set<UInt64>()
    for round in 0..<repetitions {
        for offset in 0..<bodyCases.count {
            let name = bodyCases[(round + offset) % bodyCases.count]
            let result = runBodyCaseInChild(name, base: base, folder: folder)
            guard result.bytes == gib else { fail("\(name) received \(result.bytes) bytes, not \(gib)") }
            if name.hasPrefix("stream") { hashes.insert(result.hash) }
            throughput[name, default: []].append(Double(gib) / result.seconds / Double(1 << 20))
            cpu[name, default: []].append(result.cpu)
            peaks[name, default: []].append(result.peakKiB)
            baselines[name, default: []].append(result.baselineKiB)
        }
    }
    guard hashes.count == 1 else { fail("the streamed bodies hashed differently: \(hashes)") }
    print("### 1 GiB body, one process per run (\(repetitions) rounds, each case once per round in a rotating order; medians, ratios within a round)\n")
    print("| case | contender | MiB/s (median) | × URLSession (median of rounds) | CPU s per GiB (median) | × URLSession CPU | peak RSS (VmHWM, median / max) | RSS before the request | MiB/s, lowest – highest |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    let labels = [
        "download-urlsession": ("download to a file", "URLSession downloadTask"),
        "download-transit": ("download to a file", "Transit HTTPClient.download"),
        "download-transit-tasks": ("download to a file", "Transit HTTPClient.download, URLSessionTransport(downloadTasks: true)"),
        "stream-urlsession": ("stream, hash every chunk", "URLSession data delegate"),
        "stream-transit": ("stream, hash every chunk", "Transit HTTPClient.stream"),
        "stream-ahc": ("stream, hash every chunk", "Transit HTTPClient.stream on the AsyncHTTPClient adapter"),
    ]
    let mib = { (kib: Int) in fmt(Double(kib) / 1024, 1) }
    for name in bodyCases {
        let peer = name.hasPrefix("download") ? "download-urlsession" : "stream-urlsession"
        let rates = throughput[name]!
        let ratio = median(zip(rates, throughput[peer]!).map { $0 / $1 })
        let cpuRatio = median(zip(cpu[peer]!, cpu[name]!).map { $0 / $1 })
        let peak = peaks[name]!
        print("| \(labels[name]!.0) | \(labels[name]!.1) | \(fmt(median(rates))) | \(fmt(ratio, 3)) | \(fmt(median(cpu[name]!), 2)) | \(fmt(cpuRatio, 3)) | \(mib(Int(median(peak.map(Double.init))))) / \(mib(peak.max()!)) MiB | \(mib(Int(median(baselines[name]!.map(Double.init))))) MiB | \(fmt(rates.min()!)) – \(fmt(rates.max()!)) |")
    }
    print("\nStreamed body hash (FNV-1a over 64-bit words): \(String(hashes.first!, radix: 16)), the same for every run.")
}

// MARK: - Main

if let name = options.caseName {
    guard let url = options.url, let folder = options.folder else { usage() }
    runBodyCase(name, base: url, folder: folder)
    exit(0)
}

if let profile = options.profile {
    // One contender alone, for callgrind or perf; nginx must already run (--url).
    guard let base = options.url else { usage() }
    let contenders = profile.hasPrefix("mem-") ? makeInMemoryContenders(base: base) : makeContenders(base: base)
    guard let contender = contenders.first(where: { $0.key == profile }) else { usage() }
    // Each worker is a thread that starts a request and waits for its end, so no request starts
    // inside another's completion and the profile's inclusive costs do not nest.
    let perWorker = options.profileRequests / options.profileConcurrency
    let group = DispatchGroup()
    let started = ContinuousClock.now
    for _ in 0..<options.profileConcurrency {
        let start = contender.makeStart(TokenSlot())
        DispatchQueue.global().async(group: group) {
            let ended = DispatchSemaphore(value: 0)
            for _ in 0..<perWorker {
                start { bytes in
                    if bytes < 0 { fail("a request failed") }
                    ended.signal()
                }
                ended.wait()
            }
        }
    }
    group.wait()
    let elapsed = ContinuousClock.now - started
    print("\(profile): \(options.profileRequests) requests in \(elapsed); peak RSS \(procStatusKiB("VmHWM")) KiB, RSS now \(procStatusKiB("VmRSS")) KiB")
    exit(0)
}

// A closed output pipe must not kill the run before it stops nginx.
signal(SIGPIPE, SIG_IGN)
let server: NginxServer? = options.url == nil ? NginxServer(failingWith: fail) : nil
startedServer = server
let base = options.url ?? "http://127.0.0.1:\(server!.port)"
let folder = server?.folder ?? FileManager.default.temporaryDirectory.path
// Stop nginx on Ctrl-C and kill too.
let stopSignals: [any DispatchSourceSignal] = [SIGINT, SIGTERM].map { (number: Int32) -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        server?.stop()
withExtendedLifetime(stopSignals) {}
        exit(128 + number)
    }
    source.resume()
    return source
}

let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
    .split(separator: "\n").first { $0.hasPrefix("model name") }?
    .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown"
print("## transport-bench: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), server \(base) (nginx)\n")
var loadAverage = [0.0, 0.0, 0.0]
getloadavg(&loadAverage, 3)
print("Load average at start: \(loadAverage.map { fmt($0, 2) }.joined(separator: " "))\n")
if !options.skipRequests { requestsPerSecond(base: base, repetitions: options.repetitions, requestsPerRun: options.requestsPerRun) }
if !options.skipBodies { largeBodies(base: base, folder: folder, repetitions: options.bigRuns ?? options.repetitions) }
if options.resumed { resumedDownload(base: base, folder: folder) }
getloadavg(&loadAverage, 3)
print("\nLoad average at end: \(loadAverage.map { fmt($0, 2) }.joined(separator: " "))")
server?.stop()
withExtendedLifetime(stopSignals) {}
