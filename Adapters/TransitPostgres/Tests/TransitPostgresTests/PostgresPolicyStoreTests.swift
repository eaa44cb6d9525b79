import Foundation
import Logging
import PostgresNIO
import Signals
import Synchronization
import Testing
import Transit
import TransitPostgres

/// The database the tests use: `TRANSIT_POSTGRES_URL`, e.g. `postgres://user@127.0.0.1:5432/db`
/// (`scripts/fleet-check --tests` starts one and sets it).
private let databaseURL = ProcessInfo.processInfo.environment["TRANSIT_POSTGRES_URL"]

/// A client of the configured database (not yet running).
private func makeClient() throws -> PostgresClient {
    let url = try #require(databaseURL.flatMap(URLComponents.init(string:)))
    let configuration = PostgresClient.Configuration(
        host: url.host ?? "127.0.0.1", port: url.port ?? 5432,
        username: url.user ?? "postgres", password: url.password,
        database: url.path.isEmpty ? nil : String(url.path.dropFirst()), tls: .disable
    )
    return PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
}

/// A store on the configured database, its client running for the duration of `body`.
private func withStore<Result: Sendable>(
    leaseSize: Int = 1,
    leaseDuration: Duration = .milliseconds(100),
    _ body: @Sendable (PostgresPolicyStore) async throws -> Result
) async throws -> Result {
    let client = try makeClient()
    let store = PostgresPolicyStore(client: client, leaseSize: leaseSize, leaseDuration: leaseDuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        group.addTask { await store.run() }
        defer { group.cancelAll() }
        try await store.createSchema()
        return try await body(store)
    }
}

/// A key no other test run uses.
private func freshKey(_ name: String) -> String { "\(name)-\(UUID().uuidString)" }

/// Waits, for at most five seconds of real time, until `condition` holds (a notification from the
/// database is asynchronous by nature).
private func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

@Suite(
    "PostgresPolicyStore against a real database",
    .enabled(if: databaseURL != nil, "set TRANSIT_POSTGRES_URL to a PostgreSQL database (scripts/fleet-check starts one) to run these tests"),
    .serialized
)
struct PostgresPolicyStoreTests {
    @Test func aBucketIsOneGCRACellOnTheDatabasesClock() async throws {
        try await withStore { store in
            let key = freshKey("bucket")
            // One token an hour: the clock cannot refill it during the test.
            let bucket = PolicyStoreBucket(requestsPerSecond: 1.0 / 3600, burst: 2)
            #expect(try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue() == .now)
            #expect(try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue() == .now)
            // Refused: beyond the allowance, and nothing taken.
            let refused = try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: .seconds(60)).firstValue()
            guard case .refused(let wait) = refused else {
                Issue.record("expected a refusal, got \(refused)")
                return
            }
            #expect(wait > .seconds(3590) && wait <= .seconds(3600))
            let reserved = try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue()
            guard case .after(let first) = reserved else {
                Issue.record("expected a reservation, got \(reserved)")
                return
            }
            #expect(first > .seconds(3590) && first <= .seconds(3600))
            // The next in line waits one more interval.
            guard case .after(let second) = try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue() else {
                Issue.record("expected a reservation")
                return
            }
            #expect(second - first > .seconds(3590))
        }
    }

    @Test func aCooldownReachesEveryProcessWithoutARoundTripAndIsNeverShortened() async throws {
        let key = freshKey("cooldown")
        try await withStore { writer in
            try await withStore { reader in
                // The reader has loaded the running cooldowns and listens.
                #expect(await eventually { reader.cooldown(forKey: key) == nil })
                try await Task.sleep(for: .milliseconds(300))
                try await writer.extendCooldown(forKey: key, by: .seconds(30), statusCode: 429).firstValue()
                #expect(await eventually { reader.cooldown(forKey: key) != nil })
                let seen = try #require(reader.cooldown(forKey: key))
                #expect(seen.statusCode == 429)
                #expect(seen.remaining > .seconds(25) && seen.remaining <= .seconds(30))
                // A shorter one changes nothing.
                try await writer.extendCooldown(forKey: key, by: .seconds(5), statusCode: 503).firstValue()
                try await Task.sleep(for: .milliseconds(200))
                #expect(reader.cooldown(forKey: key)?.statusCode == 429)
            }
            // A process that connects later loads it.
            try await withStore { late in
                #expect(await eventually { late.cooldown(forKey: key) != nil })
            }
        }
    }

    @Test func aNamedBudgetAddsTheFleetsCounts() async throws {
        try await withStore { store in
            let name = freshKey("budget")
            let first = try await store.recordBudget(name, requests: 10, retries: 1, window: .seconds(60)).firstValue()
            #expect(first == PolicyStoreBudgetCounts(requests: 10, retries: 1))
            let second = try await store.recordBudget(name, requests: 5, retries: 2, window: .seconds(60)).firstValue()
            #expect(second == PolicyStoreBudgetCounts(requests: 15, retries: 3))
            let other = try await store.recordBudget(freshKey("other"), requests: 1, retries: 0, window: .seconds(60)).firstValue()
            #expect(other == PolicyStoreBudgetCounts(requests: 1, retries: 0))
        }
    }

    @Test func aLeaseTakesFreeTokensAtOnceAndSpendsThemWithoutARoundTrip() async throws {
        let key = freshKey("lease")
        let bucket = PolicyStoreBucket(requestsPerSecond: 1.0 / 3600, burst: 4)
        try await withStore(leaseSize: 4, leaseDuration: .seconds(30)) { leasing in
            try await withStore { other in
                #expect(try await leasing.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue() == .now)
                // The bucket is empty for everyone else: the lease holds the other three.
                let refused = try await other.takeTokens(1, forKey: key, bucket: bucket, maxWait: .zero).firstValue()
                #expect(refused != .now)
                for _ in 0..<3 {
                    // Answered synchronously from the lease: no statement.
                    let answer = Mutex<PolicyStoreGrant?>(nil)
                    withExtendedLifetime(leasing.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).sink(
                        receiveCompletion: { _ in }, receiveValue: { grant in answer.withLock { $0 = grant } }
                    )) {}
                    #expect(answer.withLock { $0 } == .now)
                }
                let spent = try await leasing.takeTokens(1, forKey: key, bucket: bucket, maxWait: .zero).firstValue()
                #expect(spent != .now)
            }
        }
    }

    @Test func processesStartingTogetherCreateTheSchemaOnce() async throws {
        // A fleet starts at once: every process's `run()` and its own `createSchema()` create
        // the same tables at the same moment, on a database that has none of them yet.
        let prefix = "race_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") + "_"
        let client = try makeClient()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await withThrowingTaskGroup(of: Void.self) { creators in
                for _ in 0..<8 {
                    creators.addTask {
                        try await PostgresPolicyStore(client: client, tablePrefix: prefix).createSchema()
                    }
                }
                try await creators.waitForAll()
            }
            let store = PostgresPolicyStore(client: client, tablePrefix: prefix)
            let budget = try await store.recordBudget("race", requests: 1, retries: 0, window: .seconds(60)).firstValue()
            #expect(budget == PolicyStoreBudgetCounts(requests: 1, retries: 0))
            for table in ["buckets", "cooldowns", "budgets"] {
                try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(prefix)\(table)"))
            }
        }
    }

    @Test func idleKeysAreSwept() async throws {
        try await withStore { store in
            let key = freshKey("idle")
            let bucket = PolicyStoreBucket(requestsPerSecond: 100, burst: 1)
            #expect(try await store.takeTokens(1, forKey: key, bucket: bucket, maxWait: nil).firstValue() == .now)
            // Full again 10 ms later: swept.
            try await Task.sleep(for: .milliseconds(50))
            #expect(try await store.sweepIdleKeys() >= 1)
        }
    }
}
