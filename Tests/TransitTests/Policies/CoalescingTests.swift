import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

@Suite("Request coalescing")
struct CoalescingTests {
    let scheduler = TestScheduler()

    private func client(_ transport: StubTransport, coalescing: Bool = true) -> HTTPClient {
        // No deadline, so the only pending actions are the transport's own.
        HTTPClient(transport: transport) {
            $0.deadline = .unlimited
            $0.scheduler = scheduler
            $0.coalescesRequests = coalescing
        }
    }

    private func get(_ url: String, token: String? = nil) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    @Test func identicalGETsInFlightShareOneRequest() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("shared").delayed(by: .seconds(1)))
        let http = client(transport)
        let probes = (0..<5).map { _ in RequestProbe(http.send(get("https://api.example.com/feed", token: "a"))) }
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 1)
        #expect(probes.allSatisfy { $0.values.map(\.text) == ["shared"] && $0.isFinished })
        // Once answered, the next request goes to the network again: nothing is cached.
        _ = RequestProbe(http.send(get("https://api.example.com/feed", token: "a")))
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 2)
    }

    @Test func differentCredentialsOrURLsDoNotShare() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("x").delayed(by: .seconds(1)))
        let http = client(transport)
        let probes = [
            RequestProbe(http.send(get("https://api.example.com/feed", token: "a"))),
            RequestProbe(http.send(get("https://api.example.com/feed", token: "b"))),
            RequestProbe(http.send(get("https://api.example.com/feed?page=2", token: "a"))),
        ]
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 3)
        #expect(probes.allSatisfy { $0.isFinished })
    }

    @Test func oneSubscriberCancellingLeavesTheOthersAndTheLastOneOutCancelsTheRequest() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.text("x").delayed(by: .seconds(1)))
        let http = client(transport)
        let a = RequestProbe(http.send(get("https://api.example.com/feed")))
        let b = RequestProbe(http.send(get("https://api.example.com/feed")))
        a.cancel()
        scheduler.advance(by: .seconds(1))
        #expect(a.events.isEmpty)
        #expect(b.values.first?.text == "x")
        let c = RequestProbe(http.send(get("https://api.example.com/feed")))
        let d = RequestProbe(http.send(get("https://api.example.com/feed")))
        c.cancel()
        d.cancel()
        #expect(scheduler.pendingCount == 0) // the shared request's delivery was cancelled
        #expect(transport.requests.count == 2)
    }

    @Test func postsAndUncoalescedClientsNeverShare() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(.status(201).delayed(by: .seconds(1)))
        var post = get("https://api.example.com/items")
        post.httpMethod = "POST"
        let http = client(transport)
        _ = [RequestProbe(http.send(post)), RequestProbe(http.send(post))]
        let plain = client(transport, coalescing: false)
        _ = [RequestProbe(plain.send(get("https://api.example.com/a"))), RequestProbe(plain.send(get("https://api.example.com/a")))]
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 4)
    }

    @Test func aFailureReachesEverySubscriber() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get).thenRespond(.failure(URLError(.networkConnectionLost)).delayed(by: .seconds(1)))
        let http = client(transport)
        let probes = (0..<3).map { _ in RequestProbe(http.send(get("https://api.example.com/feed"))) }
        scheduler.advance(by: .seconds(1))
        #expect(transport.requests.count == 1)
        #expect(probes.allSatisfy { $0.failure != nil && $0.terminalCount == 1 })
    }
}
