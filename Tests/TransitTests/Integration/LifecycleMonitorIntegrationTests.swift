import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitTesting

/// The lifecycle monitor over `URLSessionTransport` and real sockets: the byte counts of every
/// attempt (headers included) match what the loopback server sent and received.
@Suite("Lifecycle monitor over loopback")
struct LifecycleMonitorIntegrationTests {
    private func client(_ log: EventLog) -> HTTPClient {
        let configuration = URLSessionConfiguration.loopbackTests()
        return HTTPClient(transport: URLSessionTransport(configuration: configuration)) { $0.monitors = [log] }
    }

    /// What Transit counts for a request the server received: the request line, and the header
    /// lines of the headers Transit sent (`sentNames`), `Host` and `Content-Length` — not those
    /// the URL loading system added on its own — then the blank line.
    private func countedHead(of received: LoopbackRequest, sentNames: Set<String>) -> Int {
        let counted = sentNames.union(["host", "content-length"])
        var text = "\(received.method) \(received.target) HTTP/1.1\r\n"
        for header in received.headers where counted.contains(header.name.lowercased()) {
            text += "\(header.name): \(header.value)\r\n"
        }
        return (text + "\r\n").utf8.count
    }

    @Test func bytesIncludingHeadersOfEveryAttemptAcrossARedirectAndARetryMatchTheWire() async throws {
        let redirect = LoopbackResponse.status(302, headers: ["Location": "/final"])
        let busy = LoopbackResponse.text("busy", status: 503)
        let hello = LoopbackResponse.text("hello", headers: ["X-Trace": "t-1"])
        let finalHits = SharedValue(0)
        let log = EventLog()
        try await withLoopbackServer(handler: { request in
            guard request.path == "/final" else { return redirect }
            return finalHits.update { hits in
                hits += 1
                return hits == 1 ? busy : hello
            }
        }) { server in
            let text = try await client(log).send(URLRequest(url: server.url("/start?page=1")))
                .catchHTTPErrors()
                .retry(RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(10), jitter: .none))
                .map(\.text)
                .firstValue()
            #expect(text == "hello")

            let attempts = log.attempts
            try #require(attempts.count == 4, "\(log.names)")
            #expect(attempts.map(\.head?.statusCode) == [302, 503, 302, 200])
            // Received: exactly the status line and headers the server wrote, and the body bytes.
            let heads = [redirect, busy, redirect, hello].map { $0.head(forMethod: "GET", closing: false).count }
            #expect(attempts.map(\.receivedHeadBytes) == heads)
            #expect(attempts.map(\.receivedBodyBytes) == [0, 4, 0, 5])
            // Sent: the request line and the headers Transit gave, as the server read them.
            let received = server.requests
            try #require(received.count == 4)
            for (ended, request) in zip(zip(attempts, log.events(named: "attemptEnded")), received) {
                let (attempt, event) = ended
                let names = Set((event.request?.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() })
                #expect(attempt.sentHeadBytes == countedHead(of: request, sentNames: names), "\(request.target)")
                #expect(attempt.sentBodyBytes == 0)
            }
            #expect(received.map(\.target) == ["/start?page=1", "/final", "/start?page=1", "/final"])
            // Wall-clock timings, in order.
            for attempt in attempts {
                let headAt = try #require(attempt.headAt)
                #expect(attempt.startedAt <= headAt && headAt <= attempt.endedAt)
            }
            #expect(attempts[0].endedAt <= attempts[1].startedAt)
            #expect(log.count("retryScheduled") == 1 && log.count("redirectFollowed") == 2)
        }
    }

    @Test func aBodyAndItsContentLengthAreCountedAsTheServerReadThem() async throws {
        let log = EventLog()
        try await withLoopbackServer(handler: { _ in .status(201) }) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            request.httpBody = Data(repeating: 7, count: 1500)
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let response = try await client(log).send(request).firstValue()
            #expect(response.statusCode == 201)
            let attempt = try #require(log.attempts.first)
            let received = try #require(server.requests.first)
            #expect(received.body.count == 1500)
            #expect(attempt.sentBodyBytes == 1500)
            let names = Set((log.events(named: "attemptEnded").first?.request?.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() })
            #expect(attempt.sentHeadBytes == countedHead(of: received, sentNames: names))
            #expect(attempt.receivedHeadBytes == LoopbackResponse.status(201).head(forMethod: "POST", closing: false).count)
        }
    }
}
