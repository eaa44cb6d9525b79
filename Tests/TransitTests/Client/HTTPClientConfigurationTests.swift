import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// One configuration value makes a client, and the client's one scheduler times every policy it
/// uses: no policy is given a clock.
@Suite("HTTPClient configuration and its one clock")
struct HTTPClientConfigurationTests {
    let scheduler = TestScheduler()

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    private struct Refused: Error {}

    @Test func theDefaultsAreTheDocumentedOnes() {
        let configuration = HTTPClient.Configuration()
        #expect((configuration.transport as? URLSessionTransport) === URLSessionTransport.shared)
        #expect(configuration.defaultHeaders.isEmpty)
        #expect(configuration.userAgent == "Transit")
        #expect(configuration.monitors.isEmpty)
        #expect(configuration.maxResponseBytes == 32 << 20)
        #expect(configuration.maxResponseBytes == HTTPClient.defaultMaxResponseBytes)
        #expect(configuration.deadline == .after(.seconds(300)))
        #expect(configuration.deadline == HTTPClient.defaultDeadline)
        #expect(configuration.redirectPolicy == .follow)
        #expect(configuration.sensitiveHeaders.isEmpty)
        #expect((configuration.scheduler as? DispatchQueue) === HTTPClient.timerQueue)
        #expect(configuration.rateLimiter == nil)
        #expect(configuration.cooldowns == nil)
        #expect(!configuration.coalescesRequests)
        #expect(configuration.failover == nil)
        #expect(configuration.authorizer == nil)
    }

    @Test func aClientKeepsTheConfigurationItWasMadeWith() {
        let transport = StubTransport(scheduler: scheduler)
        let plain = HTTPClient(transport: transport)
        #expect((plain.configuration.transport as? StubTransport) === transport)
        #expect(plain.configuration.userAgent == "Transit")
        #expect(HTTPClient().configuration.userAgent == "Transit")
        #expect(HTTPClient.shared.configuration.maxResponseBytes == HTTPClient.defaultMaxResponseBytes)

        var configuration = HTTPClient.Configuration(transport: transport)
        configuration.userAgent = "Forum/2"
        configuration.sensitiveHeaders = ["X-Session"]
        configuration.maxResponseBytes = 1024
        let client = HTTPClient(configuration: configuration)
        #expect(client.configuration.userAgent == "Forum/2")
        #expect(client.configuration.sensitiveHeaders == ["X-Session"])
        #expect(client.configuration.maxResponseBytes == 1024)

        let configured = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.coalescesRequests = true
        }
        #expect((configured.configuration.scheduler as? TestScheduler) === scheduler)
        #expect(configured.configuration.coalescesRequests)
    }

    @Test func aConfigurationThatThrowsMakesNoClient() {
        #expect(throws: Refused.self) {
            _ = try HTTPClient { _ in throw Refused() }
        }
    }

    @Test func theUserAgentIsSentUnlessADefaultHeaderNamesOne() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(.status(204))
        _ = RequestProbe(HTTPClient(transport: transport) { $0.userAgent = "Forum/2" }.send(get("https://a.example/x")))
        _ = RequestProbe(HTTPClient(transport: transport) {
            $0.userAgent = "Forum/2"
            $0.defaultHeaders = ["user-agent": "Mine/1"]
        }.send(get("https://a.example/x")))
        _ = RequestProbe(HTTPClient(transport: transport) { $0.userAgent = nil }.send(get("https://a.example/x")))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "User-Agent") } == ["Forum/2", "Mine/1", nil])
    }

    /// The rate limiter, the cooldowns and the failover group are given no scheduler: the
    /// client's `TestScheduler` times them all.
    @Test func everyPolicyIsTimedByTheClientsScheduler() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.path == "/v1/busy" })
            .thenRespond(.status(429, headers: ["Retry-After": "5"])).thenRespond(.text("busy no more"))
        transport.stub(matching: { $0.url?.host == "down.example" }).thenRespond(.failure(URLError(.cannotConnectToHost)))
        transport.stub().thenRespond(.text("ok"))
        let failover = HostFailover(origins: ["https://down.example", "https://up.example"], quarantine: .seconds(30))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.rateLimiter = RateLimiter(requestsPerSecond: 1, burst: 1)
            $0.cooldowns = Cooldowns(maxWait: .seconds(10))
            $0.failover = failover
        }

        // A 429 with Retry-After: 5 cools its key down for five seconds of the client's clock.
        let busy = RequestProbe(client.send(get("https://api.example/v1/busy")))
        #expect(busy.values.first?.statusCode == 429)
        let paused = RequestProbe(client.send(get("https://api.example/v1/busy")))
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(4))
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(1))
        #expect(paused.values.first?.text == "busy no more")

        // One request a second: the second to a key waits a second of the client's clock.
        _ = RequestProbe(client.send(get("https://api.example/v2/a")))
        let spaced = RequestProbe(client.send(get("https://api.example/v2/b")))
        #expect(spaced.values.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(spaced.values.first?.text == "ok")

        // A refused origin is quarantined for thirty seconds of the client's clock.
        let moved = RequestProbe(client.send(get("https://down.example/v3/x")))
        #expect(moved.values.first?.text == "ok")
        #expect(transport.requests.last?.url?.host == "up.example")
        #expect(!failover.isHealthy("https://down.example:443", on: scheduler))
        scheduler.advance(by: .seconds(29))
        #expect(!failover.isHealthy("https://down.example:443", on: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(failover.isHealthy("https://down.example:443", on: scheduler))
    }

    /// A deadline and the monitors' timestamps are on the same clock as the policies.
    @Test func deadlinesAndEventsUseTheSameClock() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(.text("late").delayed(by: .seconds(20)))
        let log = EventLog()
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.monitors = [log]
            $0.deadline = .after(.seconds(10))
        }
        scheduler.advance(by: .seconds(3))
        let probe = RequestProbe(client.send(get("https://api.example/slow")))
        scheduler.advance(by: .seconds(10))
        #expect((probe.failure as? TransportError)?.code == .timedOut)
        #expect(log.events(named: "requestStarted").first?.time == .seconds(3))
        #expect(log.events(named: "requestFailed").first?.time == .seconds(13))
    }

    /// Two clients on one scheduler sharing one `Cooldowns`: a 429 answered to one pauses the
    /// other's requests to the same key.
    @Test func aPolicySharedByTwoClientsSharesItsState() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.path == "/v1/a" }).thenRespond(.status(429, headers: ["Retry-After": "5"]))
        transport.stub().thenRespond(.text("ok"))
        let cooldowns = Cooldowns()
        let first = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = cooldowns
        }
        let second = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = cooldowns
        }
        _ = RequestProbe(first.send(get("https://api.example/v1/a")))
        let paused = RequestProbe(second.send(get("https://api.example/v1/b")))
        #expect(transport.requests.count == 1)
        #expect(cooldowns.remaining(forKey: "https://api.example:443/v1", on: scheduler) == .seconds(5))
        scheduler.advance(by: .seconds(5))
        #expect(paused.values.first?.text == "ok")
        #expect(transport.requests.count == 2)
    }
}
