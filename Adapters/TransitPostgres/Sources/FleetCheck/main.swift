// The processes of `scripts/fleet-check`: one recording server, and clients that send through
// Transit's policies sharing a PostgresPolicyStore.
//
//   fleet-check server LOG PORTFILE
//       Serves on 127.0.0.1 (an ephemeral port, written to PORTFILE) and appends one line per
//       arrival to LOG: `epoch-seconds client path status sent-epoch-seconds` (the last from the
//       client's `X-Fleet-Sent-At`, `-` without it). `/limit/…` answers 200; the first
//       request to `/cooldown/…` a second after the first answers 429 with `Retry-After: 2`, the
//       rest 200;
//       `/flaky/…` answers 503 to every other request, 200 to the rest.
//   fleet-check client ID PHASE BASE-URL POSTGRES-URL SECONDS
//       PHASE is `limit`, `lease`, `cooldown`, `budget` or `outage`; prints one line per monitor
//       event of the policy store (`event epoch-seconds ID lost|restored`).
//   fleet-check bench POSTGRES-URL KEY LEASE COUNT
//       The latency of COUNT calls that take a token (leases of LEASE tokens), against the same
//       calls on an InMemoryPolicyStore.
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import PostgresNIO
import Signals
import Synchronization
import Transit
import TransitPostgres
import TransitTesting

/// The shared limit of the `limit`, `lease` and `outage` phases.
enum Limits {
    /// The scheduler of the retries and of the in-memory peer.
    static let timers = DispatchQueue(label: "fleet-check.timers")
    static let requestsPerSecond = 20.0
    static let burst = 4
    static let fleetSize = 4
}

func epoch() -> String { String(format: "%.4f", Date().timeIntervalSince1970) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// Sends the requests of `phase` through `client` until `until`: six at a time for the rate limit,
/// one every 100 ms for the cooldown, one every 40 ms with retries for the budget.
func load(phase: String, id: String, base: String, client: HTTPClient, retry: RetryPolicy, until end: ContinuousClock.Instant) async {
    // An atomic, not a `Mutex`: on Linux a contended `Mutex` is handed over inside the kernel,
    // where the thread sanitizer cannot see it and reports a race on the counter.
    final class Sequence: Sendable {
        let next = Atomic(0)
    }
    let sequence = Sequence()
    let workers = phase == "cooldown" || phase == "budget" ? 1 : 6
    await withTaskGroup(of: Void.self) { load in
        for _ in 0..<workers {
            load.addTask {
                while ContinuousClock.now < end {
                    let number = sequence.next.wrappingAdd(1, ordering: .relaxed).oldValue
                    switch phase {
                    case "cooldown":
                        _ = try? await client.send(URLRequest(url: URL(string: "\(base)/cooldown/cooldown/\(id)/\(number)")!)).firstValue()
                        try? await Task.sleep(for: .milliseconds(100))
                    case "budget":
                        _ = try? await client.send(URLRequest(url: URL(string: "\(base)/flaky/budget/\(id)/\(number)")!))
                            .catchHTTPErrors().retry(retry, scheduler: Limits.timers).firstValue()
                        try? await Task.sleep(for: .milliseconds(40))
                    default:
                        _ = try? await client.send(URLRequest(url: URL(string: "\(base)/limit/\(phase)/\(id)/\(number)")!)).firstValue()
                    }
                }
            }
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: fleet-check server LOG PORTFILE | client ID PHASE BASE-URL POSTGRES-URL SECONDS") }

switch arguments[1] {
case "server":
    guard arguments.count == 4 else { fail("usage: fleet-check server LOG PORTFILE") }
    _ = FileManager.default.createFile(atPath: arguments[2], contents: nil)
    guard let log = FileHandle(forWritingAtPath: arguments[2]) else { fail("cannot write \(arguments[2])") }
    let state = Locked<(flaky: Int, limited: Bool, firstCooldown: Date?)>((0, false, nil))
    let server = LoopbackServer { request in
        let path = request.path
        let status: Int
        var headers: [String: String] = [:]
        if path.hasPrefix("/cooldown/") {
            let now = Date()
            let limit = state.withLock { state in
                let first = state.firstCooldown ?? now
                state.firstCooldown = first
                guard !state.limited, now.timeIntervalSince(first) > 1 else { return false }
                state.limited = true
                return true
            }
            status = limit ? 429 : 200
            if limit { headers["Retry-After"] = "2" }
        } else if path.hasPrefix("/flaky/") {
            let count = state.withLock { state in
                defer { state.flaky += 1 }
                return state.flaky
            }
            status = count % 2 == 0 ? 503 : 200
        } else {
            status = 200
        }
        let client = request.value(forHTTPHeaderField: "X-Fleet-Client") ?? "?"
        let sent = request.value(forHTTPHeaderField: "X-Fleet-Sent-At") ?? "-"
        log.write(Data("\(epoch()) \(client) \(path) \(status) \(sent)\n".utf8))
        return .status(status, headers: headers)
    }
    do { try server.start() } catch { fail("server: \(error)") }
    try? String(server.port).write(toFile: arguments[3], atomically: true, encoding: .utf8)
    while true { sleep(3600) }

case "client":
    guard arguments.count == 7, let seconds = Double(arguments[6]) else {
        fail("usage: fleet-check client ID PHASE BASE-URL POSTGRES-URL SECONDS")
    }
    let (id, phase, base) = (arguments[2], arguments[3], arguments[4])
    guard let postgresURL = URLComponents(string: arguments[5]), let host = postgresURL.host else { fail("bad PostgreSQL URL") }
    var configuration = PostgresClient.Configuration(
        host: host, port: postgresURL.port ?? 5432,
        username: postgresURL.user ?? "postgres", password: postgresURL.password,
        database: postgresURL.path.isEmpty ? nil : String(postgresURL.path.dropFirst()),
        tls: .disable
    )
    configuration.options.connectTimeout = .seconds(1)
    let postgres = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "fleet-check", factory: { _ in SwiftLogNoOpLogHandler() }))
    let store = PostgresPolicyStore(
        client: postgres,
        leaseSize: phase == "lease" ? 4 : 1,
        leaseDuration: .milliseconds(100)
    )
    // A deadline of a second, not the default 250 ms: CI machines are shared, and a call that misses
    // its deadline sends the process to its local share (that is the outage phase's subject).
    let sharing = PolicySharing(store: store, fleetSize: Limits.fleetSize, deadline: .seconds(1), quarantine: .seconds(1))
    final class Monitor: HTTPEventMonitor {
        let id: String
        init(id: String) { self.id = id }
        func receive(_ event: HTTPEvent) {
            let what: String
            switch event.kind {
            case .policyStoreLost: what = "lost"
            case .policyStoreRestored: what = "restored"
            default: return
            }
            FileHandle.standardOutput.write(Data("event \(epoch()) \(id) \(what)\n".utf8))
        }
        /// When each attempt leaves: after the client's policies let it through (the store's
        /// grant), just before the transport. The limit is checked on these times, so the
        /// delivery to the server (slow under the thread sanitizer on a loaded machine) is not
        /// counted against the store.
        func headerFields(forAttempt event: HTTPEvent) -> [HTTPField] {
            [HTTPField(name: "X-Fleet-Sent-At", value: epoch())]
        }
    }
    let client = HTTPClient {
        $0.monitors = [Monitor(id: id)]
        $0.defaultHeaders = ["X-Fleet-Client": id]
        switch phase {
        case "cooldown":
            $0.cooldowns = Cooldowns(maxWait: .seconds(10), sharing: sharing)
        case "budget":
            break
        default:
            $0.rateLimiter = RateLimiter(requestsPerSecond: Limits.requestsPerSecond, burst: Limits.burst, key: .origin, sharing: sharing)
        }
    }
    let budget = RetryBudget(ratio: 0.2, minRetriesPerSecond: 0.5, window: .seconds(10), name: "fleet-check", sharing: sharing)
    let retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(50), jitter: .none, budget: budget)
    let end = ContinuousClock.now.advanced(by: .seconds(seconds))

    await withTaskGroup(of: Void.self) { group in
        group.addTask { await postgres.run() }
        group.addTask { await store.run() }
        // Let the store connect and load the cooldowns before the first request.
        try? await Task.sleep(for: .milliseconds(300))
        await load(phase: phase, id: id, base: base, client: client, retry: retry, until: end)
        group.cancelAll()
    }
    print("done \(epoch()) \(id)")

case "bench":
    // fleet-check bench POSTGRES-URL KEY LEASE COUNT: takes COUNT tokens one by one from KEY (a
    // bucket that never runs dry), timing each call; prints the median and 99th percentile in µs.
    guard arguments.count == 6, let lease = Int(arguments[4]), let count = Int(arguments[5]),
          let postgresURL = URLComponents(string: arguments[2]), let host = postgresURL.host
    else { fail("usage: fleet-check bench POSTGRES-URL KEY LEASE COUNT") }
    let configuration = PostgresClient.Configuration(
        host: host, port: postgresURL.port ?? 5432, username: postgresURL.user ?? "postgres", password: nil,
        database: postgresURL.path.isEmpty ? nil : String(postgresURL.path.dropFirst()), tls: .disable
    )
    let postgres = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "fleet-check", factory: { _ in SwiftLogNoOpLogHandler() }))
    let store = PostgresPolicyStore(client: postgres, leaseSize: lease, leaseDuration: .milliseconds(100))
    let bucket = PolicyStoreBucket(requestsPerSecond: 1_000_000, burst: 1_000_000)
    let memory = InMemoryPolicyStore(scheduler: Limits.timers)
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await postgres.run() }
        try? await store.createSchema()
        var storeMicros: [Double] = []
        var memoryMicros: [Double] = []
        let clock = ContinuousClock()
        for index in 0..<(count + 100) {
            let started = clock.now
            _ = try? await store.takeTokens(1, forKey: arguments[3], bucket: bucket, maxWait: nil).firstValue()
            let elapsed = clock.now - started
            // The peer: the same call on the in-memory store, the arithmetic without the database.
            let localStarted = clock.now
            _ = try? await memory.takeTokens(1, forKey: arguments[3], bucket: bucket, maxWait: nil).firstValue()
            let localElapsed = clock.now - localStarted
            // The first hundred warm the connections up.
            if index >= 100 {
                storeMicros.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
                memoryMicros.append(Double(localElapsed.components.attoseconds) / 1e12 + Double(localElapsed.components.seconds) * 1e6)
            }
        }
        storeMicros.sort()
        memoryMicros.sort()
        print(String(format: "postgres median %.0f µs p99 %.0f µs; in memory median %.1f µs p99 %.1f µs", storeMicros[count / 2], storeMicros[count * 99 / 100], memoryMicros[count / 2], memoryMicros[count * 99 / 100]))
        group.cancelAll()
    }

default:
    fail("unknown mode \(arguments[1])")
}
