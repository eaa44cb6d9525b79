import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// The transport conformance suite (`TransportConformance`) against the transport's own SwiftNIO
/// path, the one that carries requests to pinned hosts: a transport that routes every request
/// through it (plain http included), one test per check, each with its own transport.
@Suite("Pinned path conformance")
struct PinnedPathConformanceTests {
    @Test(arguments: TransportConformance.checks)
    func conforms(_ check: TransportConformance.Check) async throws {
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        do {
            try await check.run { transport }
        } catch {
            try await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
    }
}

/// Connection reuse on the pinned path, over plain http (the transport routes every request
/// through that path): what is reused, and the one retry of a request whose reused connection
/// closed before any byte of the response.
@Suite("Pinned path connection reuse")
struct PinnedPathReuseTests {
    @Test func sequentialRequestsShareOneConnection() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        for response: LoopbackResponse in [.text("one"), .text("two"), .text("three")] { server.enqueue(response) }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        let client = Transit.HTTPClient(transport: transport)
        for expected in ["one", "two", "three"] {
            let response = try await client.send(URLRequest(url: server.url("/n"))).firstValue()
            #expect(response.text == expected)
        }
        #expect(server.connectionCount == 1)
        #expect(transport.pinnedConnections.openedCount == 1)
        try await transport.shutdown()
        #expect(await server.waitUntil(timeout: .seconds(60)) { server.openConnectionCount == 0 })
    }

    @Test func aConnectionTheServerAsksToCloseIsNotReused() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        for response: LoopbackResponse in [.text("one", headers: ["Connection": "close"]), .text("two")] { server.enqueue(response) }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        defer { Task { try await transport.shutdown() } }
        let client = Transit.HTTPClient(transport: transport)
        #expect(try await client.send(URLRequest(url: server.url("/a"))).firstValue().text == "one")
        #expect(try await client.send(URLRequest(url: server.url("/b"))).firstValue().text == "two")
        #expect(transport.pinnedConnections.openedCount == 2)
    }

    @Test func anIdempotentRequestOnAReusedConnectionClosedBeforeTheResponseIsSentOnceMore() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        // The second request finds the kept-alive connection closed without an answer.
        for response: LoopbackResponse in [.text("one"), .dropConnection, .text("two")] { server.enqueue(response) }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        defer { Task { try await transport.shutdown() } }
        let client = Transit.HTTPClient(transport: transport)
        #expect(try await client.send(URLRequest(url: server.url("/a"))).firstValue().text == "one")
        #expect(try await client.send(URLRequest(url: server.url("/b"))).firstValue().text == "two")
        #expect(server.requests.count == 3)
        #expect(transport.pinnedConnections.openedCount == 2)
    }

    @Test func aPOSTOnAReusedConnectionClosedBeforeTheResponseIsNotSentAgain() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        for response: LoopbackResponse in [.text("one"), .dropConnection, .text("never")] { server.enqueue(response) }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        defer { Task { try await transport.shutdown() } }
        #expect(try await Transit.HTTPClient(transport: transport).send(URLRequest(url: server.url("/a"))).firstValue().text == "one")
        var post = URLRequest(url: server.url("/b"))
        post.httpMethod = "POST"
        post.httpBody = Data("payload".utf8)
        do {
            _ = try await transport.send(post).firstValue()
            Issue.record("the POST did not fail")
        } catch {
            #expect((error as? URLError)?.code == .networkConnectionLost, "\(error)")
        }
        #expect(server.requests.count == 2)
    }
}
