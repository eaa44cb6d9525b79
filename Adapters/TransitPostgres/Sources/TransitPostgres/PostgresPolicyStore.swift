import Foundation
import Logging
import PostgresNIO
import Signals
import Synchronization
import Transit

/// A ``Transit/PolicyStore`` on PostgreSQL: the rate limits, cooldowns and retry budgets of a fleet
/// of processes kept in one database, timed by the database's clock.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration, backgroundLogger: logger)
/// let store = PostgresPolicyStore(client: postgres)
/// // In the service's task group, next to `postgres.run()`:
/// group.addTask { await store.run() }
/// let sharing = PolicySharing(store: store, fleetSize: 20)
/// ```
///
/// - **One statement per operation**, timed by the database's `now()`, so processes whose clocks
///   disagree share one limit. A bucket is a GCRA cell updated by one
///   `INSERT … ON CONFLICT … DO UPDATE … RETURNING`; a cooldown is written, and announced to every
///   process with `NOTIFY`, by one statement; a budget's counts are added and its window summed by
///   one statement.
/// - **Cooldowns cost nothing per request**: ``run()`` listens (`LISTEN`) and keeps a local view,
///   which ``cooldown(forKey:)`` reads; it loads the cooldowns running when it connects, and again
///   after every reconnection.
/// - **Leases**: with `leaseSize` above 1, a call that finds tokens free takes up to `leaseSize`
///   of them at once and keeps the rest for the next calls of this process, which then need no
///   round trip, for at most `leaseDuration`; tokens still unspent then are dropped (never given
///   back, so a lease never adds tokens). A token is spent at most `leaseDuration` after the
///   database granted it, so over any window `Δt` the fleet sends at most
///   `burst + rate × (Δt + leaseDuration)` requests: the lease's slack is `rate × leaseDuration`.
///   Without leases (the default) it is `burst + rate × Δt`.
/// - **Schema**: ``run()`` creates its tables (``createSchema()``) if they do not exist —
///   `UNLOGGED` tables, since their content is worth less than the write-ahead log it would cost —
///   and sweeps idle keys (full buckets, ended cooldowns, budget slices out of every window) every
///   ``sweepInterval``.
/// - **Cancellation**: every call is a `Task` that the signal's cancellation cancels: a call
///   cancelled before its statement is sent does not send it; one cancelled after may still take
///   its tokens (they then count against the limit, never above it).
///
/// Failures are the policies' business: a call that fails, or outlives the ``PolicySharing``'s
/// deadline, sends the policy to its fallback. Connection strings and passwords are never part
/// of an error this store reports.
public final class PostgresPolicyStore: PolicyStore {
    /// The PostgreSQL client (its ``PostgresClient/run()`` must be running).
    public let client: PostgresClient
    /// How many tokens a call takes at once when they are free (1: no leases).
    public let leaseSize: Int
    /// How long leased tokens may be spent.
    public let leaseDuration: Duration
    /// How often idle keys are swept.
    public let sweepInterval: Duration
    private let tables: Tables
    private let logger: Logger
    private let clock = ContinuousClock()
    private let leases = Locked<[String: Lease]>([:])
    private let cooldowns = Locked<[String: LocalCooldown]>([:])

    private struct Lease {
        var tokens: Int
        var expires: ContinuousClock.Instant
    }

    private struct LocalCooldown {
        var until: ContinuousClock.Instant
        var statusCode: Int
    }

    /// The table names, from a prefix.
    struct Tables: Sendable {
        let buckets: String
        let cooldowns: String
        let budgets: String
        let channel: String

        init(prefix: String) {
            buckets = prefix + "buckets"
            cooldowns = prefix + "cooldowns"
            budgets = prefix + "budgets"
            channel = prefix + "cooldowns"
        }
    }

    /// Creates a store on `client`.
    ///
    /// - Parameters:
    ///   - client: the PostgreSQL client; run it (`client.run()`) for as long as the store is used.
    ///   - leaseSize: how many tokens a call takes at once when they are free (1 by default: no
    ///     leases); at least 1.
    ///   - leaseDuration: how long leased tokens may be spent (100 ms by default).
    ///   - tablePrefix: the prefix of the store's tables and of its notification channel
    ///     (`transit_` by default); letters, digits and underscores only, or the default is used.
    ///   - sweepInterval: how often idle keys are deleted (one minute by default).
    ///   - logger: where the listener reports lost connections (nothing by default).
    public init(
        client: PostgresClient,
        leaseSize: Int = 1,
        leaseDuration: Duration = .milliseconds(100),
        tablePrefix: String = "transit_",
        sweepInterval: Duration = .seconds(60),
        logger: Logger = Logger(label: "transit.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.client = client
        self.leaseSize = max(1, leaseSize)
        self.leaseDuration = max(.zero, leaseDuration)
        self.sweepInterval = sweepInterval > .zero ? sweepInterval : .seconds(60)
        let valid = !tablePrefix.isEmpty && tablePrefix.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
        tables = Tables(prefix: valid ? tablePrefix : "transit_")
        self.logger = logger
    }

    // MARK: Schema and background work

    /// Creates the store's tables if they do not exist (``run()`` does it first).
    ///
    /// Safe to call from many processes at once: the statements run in one transaction that
    /// holds an advisory lock named after the table prefix, since PostgreSQL's
    /// `CREATE TABLE IF NOT EXISTS` is not safe against itself (two at once may both try to
    /// create the table, and one fails).
    public func createSchema() async throws {
        try await client.query(PostgresQuery(unsafeSQL: """
            DO $transit$ BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('\(tables.buckets)'));
                CREATE UNLOGGED TABLE IF NOT EXISTS \(tables.buckets) (
                    key text PRIMARY KEY, tat timestamptz NOT NULL, granted integer NOT NULL, wait float8 NOT NULL);
                CREATE UNLOGGED TABLE IF NOT EXISTS \(tables.cooldowns) (
                    key text PRIMARY KEY, until timestamptz NOT NULL, status integer NOT NULL);
                CREATE UNLOGGED TABLE IF NOT EXISTS \(tables.budgets) (
                    name text NOT NULL, slice bigint NOT NULL, slice_seconds float8 NOT NULL,
                    requests bigint NOT NULL, retries bigint NOT NULL, PRIMARY KEY (name, slice_seconds, slice));
            END $transit$
            """))
    }

    /// Creates the schema, then listens for cooldowns and sweeps idle keys until the calling task
    /// is cancelled. A lost connection is retried every second; meanwhile the local view of the
    /// cooldowns keeps what it knew.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen() }
            group.addTask { await self.sweep() }
            await group.waitForAll()
        }
    }

    /// Keeps the local view of the cooldowns: everything running when connected, then every
    /// notification.
    private func listen() async {
        while !Task.isCancelled {
            do {
                try await createSchema()
                try await client.withConnection { connection in
                    try await connection.listen(on: self.tables.channel) { notifications in
                        try await self.loadCooldowns(connection)
                        for try await notification in notifications {
                            self.receive(notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("policy store listener lost its connection; retrying", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func loadCooldowns(_ connection: PostgresConnection) async throws {
        let rows = try await connection.query(PostgresQuery(unsafeSQL: """
            SELECT key, EXTRACT(EPOCH FROM until - now())::float8, status FROM \(tables.cooldowns) WHERE until > now()
            """), logger: logger)
        for try await (key, remaining, status) in rows.decode((String, Double, Int).self) {
            note(key: key, remaining: remaining, statusCode: status)
        }
    }

    /// A notification: `remaining seconds` space `status` space `key`.
    private func receive(_ payload: String) {
        let parts = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let remaining = Double(parts[0]), let status = Int(parts[1]) else { return }
        note(key: String(parts[2]), remaining: remaining, statusCode: status)
    }

    private func note(key: String, remaining: Double, statusCode: Int) {
        guard remaining.isFinite, remaining > 0 else { return }
        let until = clock.now.advanced(by: .seconds(remaining))
        cooldowns.withLock { cooldowns in
            if let existing = cooldowns[key], existing.until >= until { return }
            cooldowns[key] = LocalCooldown(until: until, statusCode: statusCode)
        }
    }

    private func sweep() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: sweepInterval)
            guard !Task.isCancelled else { return }
            _ = try? await sweepIdleKeys()
        }
    }

    /// Deletes full buckets, ended cooldowns and budget slices older than their window; answers
    /// how many rows went.
    @discardableResult
    public func sweepIdleKeys() async throws -> Int {
        let rows = try await client.query(PostgresQuery(unsafeSQL: """
            WITH b AS (DELETE FROM \(tables.buckets) WHERE tat < now() RETURNING 1),
                 c AS (DELETE FROM \(tables.cooldowns) WHERE until < now() RETURNING 1),
                 s AS (DELETE FROM \(tables.budgets)
                       WHERE slice < FLOOR(EXTRACT(EPOCH FROM now()) / slice_seconds)::bigint - 10 RETURNING 1)
            SELECT (SELECT count(*) FROM b) + (SELECT count(*) FROM c) + (SELECT count(*) FROM s)
            """))
        for try await count in rows.decode(Int.self) {
            let now = clock.now
            leases.withLock { $0 = $0.filter { $0.value.expires > now } }
            cooldowns.withLock { $0 = $0.filter { $0.value.until > now } }
            return count
        }
        return 0
    }

    // MARK: PolicyStore

    public func takeTokens(_ count: Int, forKey key: String, bucket: PolicyStoreBucket, maxWait: Duration?) -> Signal<PolicyStoreGrant, any Error> {
        let count = max(1, count)
        // A leased token: no round trip.
        if count == 1, leaseSize > 1 {
            let now = clock.now
            let leased = leases.withLock { leases -> Bool in
                guard var lease = leases[key], lease.expires > now, lease.tokens > 0 else { return false }
                lease.tokens -= 1
                leases[key] = lease
                return true
            }
            if leased { return Signal(value: .now) }
        }
        let asked = count == 1 ? leaseSize : count
        let interval = 1 / bucket.requestsPerSecond
        let burst = bucket.burst
        let maxWaitSeconds = maxWait.map { Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18 }
        return Signal(operation: { [self] () async throws -> PolicyStoreGrant in
            let (granted, wait) = try await take(key: key, interval: interval, burst: burst, asked: asked, maxWait: maxWaitSeconds)
            if granted == 0 { return .refused(wait: .seconds(wait)) }
            if granted > count {
                let expires = clock.now.advanced(by: leaseDuration)
                leases.withLock { $0[key] = Lease(tokens: granted - count, expires: expires) }
            }
            return wait > 0 ? .after(.seconds(wait)) : .now
        })
    }

    /// The GCRA cell of `key` in one statement: takes `asked` tokens when they are free, fewer when
    /// fewer are (at least 1), or reserves 1 with a wait; refuses (granting 0) a wait beyond
    /// `maxWait`. Every time is the database's `now()`; the row lock orders callers.
    private func take(key: String, interval: Double, burst: Int, asked: Int, maxWait: Double?) async throws -> (granted: Int, wait: Double) {
        // $2: the emission interval T in seconds; $3: the burst B; $4: tokens asked; $5: max wait.
        let start = "GREATEST(b.tat, now())"
        let ahead = "EXTRACT(EPOCH FROM (\(start) - now()))::float8"
        let free = "FLOOR(($3::float8 * $2::float8 - \(ahead)) / $2::float8 + 1e-9)"
        let taken = "(CASE WHEN \(free) >= 1 THEN LEAST($4::float8, \(free)) ELSE 1 END)"
        let wait = "GREATEST(0, \(ahead) + \(taken) * $2::float8 - $3::float8 * $2::float8)"
        let refused = "($5::float8 IS NOT NULL AND \(wait) > $5::float8)"
        let sql = """
            INSERT INTO \(tables.buckets) AS b (key, tat, granted, wait)
            VALUES ($1, now() + LEAST($4::float8, $3::float8) * $2::float8 * interval '1 second', LEAST($4::int, $3::int), 0)
            ON CONFLICT (key) DO UPDATE SET
                tat = CASE WHEN \(refused) THEN b.tat ELSE \(start) + \(taken) * $2::float8 * interval '1 second' END,
                granted = CASE WHEN \(refused) THEN 0 ELSE \(taken)::int END,
                wait = \(wait)
            RETURNING granted, wait
            """
        var binds = PostgresBindings()
        binds.append(key)
        binds.append(interval)
        binds.append(burst)
        binds.append(asked)
        binds.append(maxWait)
        let rows = try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        for try await (granted, wait) in rows.decode((Int, Double).self) {
            return (granted, wait)
        }
        throw PostgresPolicyStoreError.noRow
    }

    public func extendCooldown(forKey key: String, by duration: Duration, statusCode: Int) -> Signal<Void, any Error> {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
        // Seen here at once, whatever the store says.
        note(key: key, remaining: seconds, statusCode: statusCode)
        let sql = """
            WITH up AS (
                INSERT INTO \(tables.cooldowns) AS c (key, until, status)
                VALUES ($1, now() + $2::float8 * interval '1 second', $3)
                ON CONFLICT (key) DO UPDATE SET until = EXCLUDED.until, status = EXCLUDED.status
                WHERE c.until < EXCLUDED.until
                RETURNING key, until, status)
            SELECT pg_notify('\(tables.channel)', EXTRACT(EPOCH FROM until - now())::float8::text || ' ' || status::text || ' ' || key)
            FROM up
            """
        return Signal(operation: { [self] () async throws -> Void in
            var binds = PostgresBindings()
            binds.append(key)
            binds.append(seconds)
            binds.append(statusCode)
            try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        })
    }

    public func cooldown(forKey key: String) -> PolicyStoreCooldown? {
        // Every request asks, and almost always nothing is cooling down.
        let now = clock.now
        return cooldowns.withLock { cooldowns in
            guard let cooldown = cooldowns[key] else { return nil }
            guard cooldown.until > now else {
                cooldowns[key] = nil
                return nil
            }
            return PolicyStoreCooldown(remaining: cooldown.until - now, statusCode: cooldown.statusCode)
        }
    }

    public func recordBudget(_ name: String, requests: Int, retries: Int, window: Duration) -> Signal<PolicyStoreBudgetCounts, any Error> {
        let windowSeconds = Double(window.components.seconds) + Double(window.components.attoseconds) * 1e-18
        let sliceSeconds = max(0.001, windowSeconds / 10)
        // The totals are read from the snapshot before this batch, which is then added.
        let sql = """
            WITH up AS (
                INSERT INTO \(tables.budgets) AS s (name, slice_seconds, slice, requests, retries)
                VALUES ($1, $4::float8, FLOOR(EXTRACT(EPOCH FROM now()) / $4::float8)::bigint, $2, $3)
                ON CONFLICT (name, slice_seconds, slice) DO UPDATE
                SET requests = s.requests + EXCLUDED.requests, retries = s.retries + EXCLUDED.retries
                RETURNING slice)
            SELECT (COALESCE(SUM(t.requests), 0) + $2)::bigint, (COALESCE(SUM(t.retries), 0) + $3)::bigint
            FROM up LEFT JOIN \(tables.budgets) t
              ON t.name = $1 AND t.slice_seconds = $4::float8 AND t.slice > up.slice - 10
            """
        return Signal(operation: { [self] () async throws -> PolicyStoreBudgetCounts in
            var binds = PostgresBindings()
            binds.append(name)
            binds.append(requests)
            binds.append(retries)
            binds.append(sliceSeconds)
            let rows = try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            for try await (total, retried) in rows.decode((Int, Int).self) {
                return PolicyStoreBudgetCounts(requests: total, retries: retried)
            }
            throw PostgresPolicyStoreError.noRow
        })
    }
}

/// A statement of ``PostgresPolicyStore`` answered without the row it always returns.
public enum PostgresPolicyStoreError: Error, Sendable, CustomStringConvertible {
    /// The statement returned no row.
    case noRow

    public var description: String {
        "The policy store's statement returned no row; the policy falls back to its local share of the limit."
    }
}
