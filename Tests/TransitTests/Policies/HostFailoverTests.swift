import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("Host failover")
struct HostFailoverTests {
    let scheduler = TestScheduler()

    private func setUp(
        primary: StubResponse,
        events: SharedValue<[String]> = SharedValue([])
    ) -> (StubTransport, HTTPClient, HostFailover) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { $0.url?.host == "api.example.com" }).thenRespond(primary)
        transport.stub(matching: { $0.url?.host == "backup.example.com" }).thenRespond(.text("from backup"))
        let failover = HostFailover(
            origins: ["https://api.example.com", "https://backup.example.com:443"],
            quarantine: .seconds(30)
        )
        return (transport, HTTPClient(transport: transport) {
            $0.monitors = [FailoverLog(events)]
            $0.scheduler = scheduler
            $0.failover = failover
        }, failover)
    }

    /// Records each failover the client's monitors are told about, as `from → to`.
    private final class FailoverLog: HTTPEventMonitor {
        let events: SharedValue<[String]>
        init(_ events: SharedValue<[String]>) { self.events = events }

        func receive(_ event: HTTPEvent) {
            guard case .failover(let from, let to, _) = event.kind else { return }
            events.update { $0.append("\(from) → \(to)") }
        }
    }

    private func request(_ method: String = "GET", path: String = "/v1/posts?page=2") -> URLRequest {
        var request = URLRequest(url: URL(string: "https://api.example.com\(path)")!)
        request.httpMethod = method
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        return request
    }

    @Test func aRefusedConnectionMovesTheRequestToTheNextOriginAndQuarantinesTheFirst() throws {
        let events = SharedValue<[String]>([])
        let (transport, client, failover) = setUp(primary: .failure(URLError(.cannotConnectToHost)), events: events)
        let probe = RequestProbe(client.send(request("POST")))
        #expect(probe.values.first?.text == "from backup")
        let moved = try #require(transport.requests.last)
        #expect(moved.url?.absoluteString == "https://backup.example.com/v1/posts?page=2")
        #expect(moved.httpMethod == "POST")
        #expect(events.value == ["https://api.example.com:443 → https://backup.example.com:443"])
        #expect(!failover.isHealthy("https://api.example.com:443", on: scheduler))

        // While quarantined, requests go straight to the backup.
        _ = RequestProbe(client.send(request()))
        #expect(transport.requests.count == 3)
        #expect(transport.requests.last?.url?.host == "backup.example.com")

        // The quarantine ends by itself: the preferred origin is tried first again.
        scheduler.advance(by: .seconds(30))
        #expect(failover.isHealthy("https://api.example.com:443", on: scheduler))
        _ = RequestProbe(client.send(request()))
        #expect(transport.requests[3].url?.host == "api.example.com")
    }

    @Test(arguments: [
        URLError(.serverCertificateUntrusted), URLError(.serverCertificateHasBadDate), URLError(.serverCertificateNotYetValid),
        URLError(.serverCertificateHasUnknownRoot), URLError(.secureConnectionFailed),
        // What Linux Foundation reports for a self-signed certificate.
        URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"]),
    ])
    func aTLSFailureMovesEvenAPostToTheNextOrigin(error: URLError) {
        let events = SharedValue<[String]>([])
        let (transport, client, failover) = setUp(primary: .failure(error), events: events)
        let probe = RequestProbe(client.send(request("POST")))
        #expect(probe.values.first?.text == "from backup")
        #expect(transport.requests.last?.url?.host == "backup.example.com")
        #expect(events.value == ["https://api.example.com:443 → https://backup.example.com:443"])
        #expect(!failover.isHealthy("https://api.example.com:443", on: scheduler))
    }

    @Test func aLostConnectionFailsOverOnlyIdempotentRequests() {
        let (transport, client, _) = setUp(primary: .failure(URLError(.networkConnectionLost)))
        let get = RequestProbe(client.send(request("GET")))
        #expect(get.values.first?.text == "from backup")
        scheduler.advance(by: .seconds(31))
        let post = RequestProbe(client.send(request("POST")))
        #expect((post.failure as? TransportError)?.code == .networkConnectionLost)
        #expect(transport.requests.filter { $0.url?.host == "backup.example.com" }.count == 1)
    }

    @Test func answersAreNotConnectionFailures() {
        let (transport, client, failover) = setUp(primary: .status(503))
        let probe = RequestProbe(client.send(request()))
        #expect(probe.values.first?.statusCode == 503)
        #expect(transport.requests.count == 1)
        #expect(failover.isHealthy("https://api.example.com:443", on: scheduler))
    }

    @Test func whenEveryOriginIsDownTheLastFailureIsDelivered() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(.failure(URLError(.cannotFindHost)))
        let failover = HostFailover(origins: ["https://a.example", "https://b.example"])
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.failover = failover
        }
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://a.example/x")!)))
        #expect((probe.failure as? TransportError)?.code == .cannotFindHost)
        #expect(transport.requests.map { $0.url?.host } == ["a.example", "b.example"])
        #expect(probe.terminalCount == 1)
        // Both quarantined: the next request still tries, earliest recovery first.
        _ = RequestProbe(client.send(URLRequest(url: URL(string: "https://a.example/x")!)))
        #expect(transport.requests.count == 4)
    }

    @Test func requestsForOtherOriginsAreUntouched() {
        let (transport, client, _) = setUp(primary: .text("primary"))
        transport.stub(matching: { $0.url?.host == "other.example.org" }).thenRespond(.failure(URLError(.cannotConnectToHost)))
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://other.example.org/x")!)))
        #expect((probe.failure as? TransportError)?.code == .cannotConnectToHost)
        #expect(transport.requests.count == 1)
    }
}
