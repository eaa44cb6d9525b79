import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// One `StubResponse` for both stubs: what each delivers, and the clear error for what one of
/// them cannot.
@Suite("StubResponse on StubTransport and StubURLProtocol")
struct StubResponseTests {
    private let url = URL(string: "https://stub.example.com/posts?page=2")!

    @Test("StubTransport fails a non-HTTP answer with badServerResponse naming the request")
    func transportRefusesNonHTTP() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.nonHTTP(body: Data("x".utf8)))
        let probe = RequestProbe(transport.send(URLRequest(url: url)))
        #expect(URLError.matches(probe.failure, .badServerResponse))
        #expect(probe.values.isEmpty)
        #expect(probe.terminalCount == 1)
        let message = try #require(probe.failure).localizedDescription
        #expect(message.contains("non-HTTP"))
        #expect(message.contains("GET https://stub.example.com/posts"))
    }

    @Test("StubTransport leaves a pending answer unanswered until the request is cancelled")
    func transportPending() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(.pending)
        let probe = RequestProbe(transport.send(URLRequest(url: url)))
        scheduler.advance(by: .seconds(3600))
        #expect(transport.requests.count == 1)
        #expect(probe.events.isEmpty)
        probe.cancel()
        #expect(probe.events.isEmpty)
        #expect(scheduler.pendingCount == 0)
    }

    @Test("StubTransport matches a stub for one URL on the exact URL, query included")
    func transportExactURL() {
        let transport = StubTransport()
        let url = self.url
        transport.stub { $0.url == url }.thenRespond(.text("exact"))
        transport.stub().thenRespond(.text("other"))
        let exact = RequestProbe(transport.send(URLRequest(url: url)))
        let other = RequestProbe(transport.send(URLRequest(url: URL(string: "https://stub.example.com/posts?page=3")!)))
        #expect(exact.values.first?.text == "exact")
        #expect(other.values.first?.text == "other")
    }

    @Test("StubTransport ends a chunked answer with its error after the last chunk")
    func transportFailsAfterBody() {
        let transport = StubTransport()
        transport.stub().thenRespond(.chunks([Data("partial".utf8)], thenFail: URLError(.networkConnectionLost)))
        let parts = RequestProbe(transport.exchange(TransportRequest(URLRequest(url: url))))
        #expect(parts.values.count == 2)
        #expect(URLError.matches(parts.failure, .networkConnectionLost))
    }

    @Test("StubURLProtocol fails a delayed or paced answer clearly instead of waiting")
    func urlProtocolRefusesTimedAnswers() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub(path: "/late").thenRespond(StubResponse.text("late").delayed(by: .seconds(5)))
        stubs.stub(path: "/paced").thenRespond(.chunks([Data("a".utf8), Data("b".utf8)], every: .seconds(1)))
        stubs.stub(path: "/now").thenRespond(.chunks([Data("a".utf8), Data("b".utf8)]))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        for path in ["/late", "/paced"] {
            let recorder = try await sendAndWait(transport, URLRequest(url: URL(string: "https://stub.example.com\(path)")!))
            #expect(recorder.responses.isEmpty, "\(path)")
            #expect(recorder.urlError?.code == .resourceUnavailable, "\(path)")
            #expect(recorder.urlError?.localizedDescription.contains("delayed or paced") == true, "\(path)")
        }
        let now = try await sendAndWait(transport, URLRequest(url: URL(string: "https://stub.example.com/now")!))
        #expect(now.responses.first?.text == "ab")
        #expect(stubs.requests.map(\.url?.path) == ["/late", "/paced", "/now"])
    }
}
