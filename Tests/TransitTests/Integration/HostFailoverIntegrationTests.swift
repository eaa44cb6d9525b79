import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Host failover over `URLSessionTransport` and real sockets: a primary that stops refuses
/// connections, requests move to the backup, and a primary that comes back on its port is used
/// again once its quarantine (virtual time) is over.
@Suite("Host failover over loopback")
struct HostFailoverIntegrationTests {
    @Test func aStoppedHostIsFailedOverAndTheRestartedOneIsUsedAgainAfterItsQuarantine() async throws {
        let scheduler = TestScheduler()
        let primary = LoopbackServer { _ in .text("primary") }
        let backup = LoopbackServer { _ in .text("backup") }
        try primary.start()
        try backup.start()
        defer { backup.stop() }
        let port = primary.port
        let primaryOrigin = "http://127.0.0.1:\(port)"
        let log = EventLog()
        let failover = HostFailover(origins: [primaryOrigin, backup.url().absoluteString], quarantine: .seconds(30))
        let configuration = URLSessionConfiguration.loopbackTests()
        let client = HTTPClient(transport: URLSessionTransport(configuration: configuration)) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.failover = failover
        }
        let request = URLRequest(url: primary.url("/v1/items?page=2"))

        #expect(try await client.send(request).firstValue().text == "primary")

        // The primary goes away: its port refuses connections, the request moves to the backup
        // and the primary is quarantined.
        primary.stop()
        #expect(try await client.send(request).firstValue().text == "backup")
        #expect(!failover.isHealthy(primaryOrigin, on: scheduler))
        #expect(backup.requests.last?.target == "/v1/items?page=2")
        #expect(log.count("hostQuarantined") == 1 && log.count("failover") == 1)

        // It comes back on the same port; while quarantined, requests still go to the backup.
        let restarted = LoopbackServer { _ in .text("primary again") }
        try restarted.start(onPort: port)
        defer { restarted.stop() }
        #expect(try await client.send(request).firstValue().text == "backup")
        #expect(restarted.requests.isEmpty)

        // The quarantine ends by the clock: the preferred origin is tried first again.
        scheduler.advance(by: .seconds(30))
        #expect(failover.isHealthy(primaryOrigin, on: scheduler))
        #expect(try await client.send(request).firstValue().text == "primary again")
        #expect(restarted.requests.count == 1)
        #expect(log.count("hostRecovered") == 1)
    }
}
