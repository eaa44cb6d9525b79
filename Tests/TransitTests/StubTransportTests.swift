import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

@Suite("StubTransport")
struct StubTransportTests {
    private func request(_ path: String, method: String = "GET") -> URLRequest {
        var request = URLRequest(url: URL(string: "https://stub.example.com\(path)")!)
        request.httpMethod = method
        return request
    }

    @Test("nothing is recorded until the signal is subscribed; every subscription is a new request")
    func cold() {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("hi"))
        let signal = transport.send(request("/a"))
        #expect(transport.requests.isEmpty)
        _ = RequestProbe(signal)
        _ = RequestProbe(signal)
        #expect(transport.requests.map { $0.url?.path } == ["/a", "/a"])
    }

    @Test("answers come in order, then the last one repeats")
    func orderedThenRepeat() {
        let transport = StubTransport()
        transport.stub(.get, path: "/me").thenRespond(.status(401)).thenRespond(.text("me"))
        let statuses = (0..<4).map { _ in RequestProbe(transport.send(request("/me"))).values.map(\.statusCode) }
        #expect(statuses == [[401], [200], [200], [200]])
    }

    @Test("a response carries status, headers, body and the request; then the signal finishes")
    func responseContents() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.json(#"{"a":1}"#, status: 201, headers: ["X-Id": "7"]))
        let probe = RequestProbe(transport.send(request("/things", method: "POST")))
        let response = try #require(probe.values.first)
        #expect(probe.isFinished)
        #expect(probe.events.count == 2)
        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "x-id") == "7")
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(response.text == #"{"a":1}"#)
        #expect(response.request.httpMethod == "POST")
    }

    @Test("json(encoding:) encodes a value")
    func jsonEncoding() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(try .json(encoding: ["k": "v"]))
        let probe = RequestProbe(transport.send(request("/")))
        #expect(probe.values.first?.data == Data(#"{"k":"v"}"#.utf8))
    }

    @Test("stubs match on method and path (any query); the first matching stub answers")
    func matching() {
        let transport = StubTransport()
        transport.stub(.post, path: "/items").thenRespond(.text("post"))
        transport.stub(path: "/items").thenRespond(.text("any method"))
        transport.stub().thenRespond(.text("fallback"))
        func text(_ path: String, _ method: String) -> String? {
            RequestProbe(transport.send(request(path, method: method))).values.first?.text
        }
        #expect(text("/items?x=1", "POST") == "post")
        #expect(text("/items", "post") == "post")
        #expect(text("/items", "GET") == "any method")
        #expect(text("/other", "DELETE") == "fallback")
    }

    @Test("an answer can be computed from the request")
    func computedAnswer() {
        let transport = StubTransport()
        transport.stub().thenRespond { request in .text(request.value(forHTTPHeaderField: "X-Echo") ?? "none") }
        var echo = request("/")
        echo.setValue("ping", forHTTPHeaderField: "X-Echo")
        #expect(RequestProbe(transport.send(echo)).values.first?.text == "ping")
    }

    @Test("a request no stub matches fails with UnexpectedRequest naming it, and is recorded")
    func unexpectedRequest() throws {
        let transport = StubTransport()
        transport.stub(path: "/known").thenRespond(.status(204))
        let probe = RequestProbe(transport.send(request("/unknown?q=1", method: "DELETE")))
        let error = try #require(probe.failure as? StubTransport.UnexpectedRequest)
        #expect(probe.terminalCount == 1)
        #expect(error.request.url?.path == "/unknown")
        #expect(!error.matchedStubWithoutAnswer)
        #expect(error.description == "StubTransport: unexpected request DELETE https://stub.example.com/unknown?q=1; add a stub for it")
        #expect(error.localizedDescription == error.description)
        #expect(transport.requests.count == 1)
    }

    @Test("a stub without answers fails with a message that says so")
    func stubWithoutAnswer() throws {
        let transport = StubTransport()
        transport.stub(path: "/empty")
        let error = try #require(RequestProbe(transport.send(request("/empty"))).failure as? StubTransport.UnexpectedRequest)
        #expect(error.matchedStubWithoutAnswer)
        #expect(error.description.contains("has no answer"))
    }

    @Test("a failure answer fails the signal with the transport error")
    func failureAnswer() {
        let transport = StubTransport()
        transport.stub().thenRespond(.failure(URLError(.timedOut)))
        let probe = RequestProbe(transport.send(request("/")))
        #expect(URLError.matches(probe.failure, .timedOut))
        #expect(probe.values.isEmpty)
        #expect(probe.terminalCount == 1)
    }

    @Test("a delayed answer arrives only when the TestScheduler reaches its time")
    func delayedAnswer() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(StubResponse.text("late").delayed(by: .seconds(30)))
        let probe = RequestProbe(transport.send(request("/slow")))
        #expect(transport.requests.count == 1, "the request is recorded when sent, not when answered")
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .seconds(29))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(probe.values.first?.text == "late")
        #expect(probe.isFinished)
        #expect(scheduler.pendingCount == 0)
    }

    @Test("a delayed failure arrives at its time too")
    func delayedFailure() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(StubResponse.failure(URLError(.networkConnectionLost)).delayed(by: .milliseconds(500)))
        let probe = RequestProbe(transport.send(request("/")))
        scheduler.advance(by: .milliseconds(499))
        #expect(probe.events.isEmpty)
        scheduler.advance(by: .milliseconds(1))
        #expect(URLError.matches(probe.failure, .networkConnectionLost))
    }

    @Test("cancelling during the delay drops the answer and its scheduled delivery")
    func cancelDuringDelay() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(StubResponse.text("late").delayed(by: .seconds(5)))
        let probe = RequestProbe(transport.send(request("/slow")))
        scheduler.advance(by: .seconds(2))
        #expect(scheduler.pendingCount == 1)
        probe.cancel()
        #expect(scheduler.pendingCount == 0, "cancelling reaches the teardown, which cancels the scheduled delivery")
        scheduler.advance(by: .seconds(10))
        #expect(probe.events.isEmpty)
    }

    @Test("clearRequests forgets the recorded requests but keeps the stubs")
    func clearRequests() {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("x"))
        _ = RequestProbe(transport.send(request("/a")))
        transport.clearRequests()
        #expect(transport.requests.isEmpty)
        #expect(RequestProbe(transport.send(request("/b"))).isFinished)
        #expect(transport.requests.map { $0.url?.path } == ["/b"])
    }
}
