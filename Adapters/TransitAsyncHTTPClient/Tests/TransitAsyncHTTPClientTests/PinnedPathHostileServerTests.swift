import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOTLS
import Signals
import Testing
import Transit
@testable import TransitAsyncHTTPClient

/// The pinned path against hostile servers on loopback (``HostileServer``): a keep-alive
/// connection closed as it is reused, a `101` on a plain GET, bytes on an idle connection, a TLS
/// handshake that never completes, and the per-host connection limit with its wait queue. Plain
/// http unless TLS is the point: the transport routes every request through the pinned path.
@Suite("Pinned path against hostile servers")
struct PinnedPathHostileServerTests {
    /// A request to `url` with a `timeoutInterval` of `timeout` seconds.
    private func request(_ url: URL, timeout: TimeInterval = 60) -> URLRequest {
        var request = URLRequest(url: url)
        request.timeoutInterval = timeout
        return request
    }

    private func configuration(
        limit: Int = 8,
        connectTimeout: TimeAmount? = nil
    ) -> AsyncHTTPClient.HTTPClient.Configuration {
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = limit
        if let connectTimeout { configuration.timeout.connect = connectTimeout }
        return configuration
    }

    // MARK: A keep-alive connection the server closes as it is reused

    @Test func aRequestSentFromTheEndOfOneWhoseConnectionTheServerClosesIsAnswered() async throws {
        // Every answer says nothing of closing, and the connection is closed right after it: the
        // next request, sent from the previous one's end, finds a pooled connection that is closing.
        let server = try HostileServer { request in .reply(HostileServer.ok("answer \(request.path)"), thenClose: true) }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        let chains = 30
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<chains {
                group.addTask {
                    let first = request(server.url("/a\(index)"), timeout: 30)
                    let second = request(server.url("/b\(index)"), timeout: 30)
                    let response = try await transport.send(first).flatMap { _ in transport.send(second) }.firstValue()
                    return response.text ?? ""
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(answers.sorted() == (0..<chains).map { "answer /b\($0)" }.sorted())
        try await transport.shutdown()
    }

    @Test func aWriteThatFailsOnAClosedConnectionFailsTheExchangeAtOnce() async throws {
        // A POST is never sent twice: its reused connection closing under it must fail it, at once.
        let server = try HostileServer { _ in .reply(HostileServer.ok("one"), thenClose: true) }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        for index in 0..<10 {
            var postRequest = request(server.url("/post\(index)"), timeout: 30)
            postRequest.httpMethod = "POST"
            postRequest.httpBody = Data("payload".utf8)
            let post = postRequest
            let started = ContinuousClock.now
            do {
                _ = try await transport.send(request(server.url("/get\(index)"), timeout: 30)).flatMap { _ in transport.send(post) }.firstValue()
            } catch {
                #expect((error as? URLError)?.code == .networkConnectionLost, "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(20))
        }
        try await transport.shutdown()
    }

    // MARK: Responses after which the connection is not reusable

    @Test func aConnectionAnswered101IsNeverPooled() async throws {
        // A plain GET answered with 101, then a flood: the connection must be closed, not pooled
        // with a decoder that stopped parsing.
        let server = try HostileServer { request in
            if request.index == 0 {
                return .replyThenFlood("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", flood: 64 << 20)
            }
            return .reply(HostileServer.ok("second"), thenClose: false)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        let first = try await transport.send(request(server.url("/upgrade"), timeout: 30)).firstValue()
        #expect(first.statusCode == 101)
        let second = try await transport.send(request(server.url("/next"), timeout: 30)).firstValue()
        #expect(second.text == "second")
        #expect(transport.pinnedConnections.openedCount == 2)
        // The upgraded connection is gone: only the second one is open.
        #expect(await server.waitUntil { server.openCount == 1 })
        try await transport.shutdown()
    }

    @Test func aConnectionAfterASuccessfulCONNECTIsNeverPooled() async throws {
        let server = try HostileServer { request in
            request.index == 0
                ? .reply("HTTP/1.1 200 Connection Established\r\n\r\n", thenClose: false)
                : .reply(HostileServer.ok("second"), thenClose: false)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        var connect = request(server.url("/"), timeout: 30)
        connect.httpMethod = "CONNECT"
        let first = try await transport.send(connect).firstValue()
        #expect(first.statusCode == 200)
        #expect(try await transport.send(request(server.url("/next"), timeout: 30)).firstValue().text == "second")
        #expect(transport.pinnedConnections.openedCount == 2)
        #expect(await server.waitUntil { server.openCount == 1 })
        try await transport.shutdown()
    }

    @Test func anIdleConnectionThatReceivesBytesIsClosed() async throws {
        // The answer is followed by bytes nobody asked for, the start of a head that never ends
        // (a decoder would keep them all): the idle connection must be closed, and the next
        // request must go on a new one.
        let server = try HostileServer { request in
            request.index == 0
                ? .replyThenFlood(HostileServer.ok("first"), prefix: "HTTP/1.1 200 OK\r\nX-Filler: ", flood: 8 << 20)
                : .reply(HostileServer.ok("second"), thenClose: false)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        #expect(try await transport.send(request(server.url("/a"), timeout: 30)).firstValue().text == "first")
        #expect(await server.waitUntil { server.openCount == 0 })
        #expect(transport.pinnedConnections.openCount == 0)
        #expect(try await transport.send(request(server.url("/b"), timeout: 30)).firstValue().text == "second")
        #expect(transport.pinnedConnections.openedCount == 2)
        try await transport.shutdown()
    }

    // MARK: Handshakes that never complete

    @Test func aHandshakeThatNeverCompletesTimesOutAndClosesItsSocket() async throws {
        let server = try HostileServer(readsNothing: true) { _ in .silence }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(configuration: configuration(connectTimeout: .milliseconds(300)), routesEverythingThroughNIO: true)
        do {
            _ = try await transport.send(request(server.url("/", secure: true), timeout: 60)).firstValue()
            Issue.record("the request did not fail")
        } catch {
            #expect((error as? URLError)?.code == .timedOut, "\(error)")
        }
        #expect(await server.waitUntil { server.acceptedCount == 1 && server.openCount == 0 })
        #expect(await server.waitUntil { transport.pinnedConnections.openCount == 0 })
        try await transport.shutdown()
    }

    @Test func aRequestThatTimesOutDuringTheHandshakeTakesItsSocketWithIt() async throws {
        // The request's own timeout is shorter than the handshake's: its failure closes the socket.
        let server = try HostileServer(readsNothing: true) { _ in .silence }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(configuration: configuration(connectTimeout: .seconds(60)), routesEverythingThroughNIO: true)
        for _ in 0..<5 {
            do {
                _ = try await transport.send(request(server.url("/", secure: true), timeout: 0.3)).firstValue()
                Issue.record("the request did not fail")
            } catch {
                #expect((error as? URLError)?.code == .timedOut, "\(error)")
            }
        }
        #expect(await server.waitUntil { server.acceptedCount == 5 && server.openCount == 0 })
        #expect(await server.waitUntil { transport.pinnedConnections.openCount == 0 })
        try await transport.shutdown()
    }

    @Test func aCancelledRequestDuringTheHandshakeClosesItsSocket() async throws {
        let server = try HostileServer(readsNothing: true) { _ in .silence }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(configuration: configuration(connectTimeout: .seconds(60)), routesEverythingThroughNIO: true)
        let token = transport.exchange(TransportRequest(request(server.url("/", secure: true)))).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        #expect(await server.waitUntil { server.acceptedCount == 1 })
        token.cancel()
        #expect(await server.waitUntil { server.openCount == 0 })
        #expect(await server.waitUntil { transport.pinnedConnections.openCount == 0 })
        try await transport.shutdown()
    }

    // MARK: The per-host connection limit

    @Test func concurrentRequestsOpenAtMostTheConfiguredConnections() async throws {
        let server = try HostileServer { request in .reply(HostileServer.ok("n\(request.index)"), thenClose: false) }
        defer { server.stop() }
        let limit = 8
        let transport = AsyncHTTPClientTransport(configuration: configuration(limit: limit), routesEverythingThroughNIO: true)
        let count = 300
        let successes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask { try await transport.send(request(server.url("/\(index)"), timeout: 30)).firstValue().statusCode == 200 }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == count)
        #expect(server.peakOpenCount <= limit, "peak \(server.peakOpenCount)")
        #expect(transport.pinnedConnections.openedCount <= limit)
        try await transport.shutdown()
    }

    @Test func waitingRequestsAreServedFirstComeFirstServed() async throws {
        let server = try HostileServer { request in
            request.index == 0 ? .held(HostileServer.ok("held")) : .reply(HostileServer.ok(request.path), thenClose: false)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(configuration: configuration(limit: 1), routesEverythingThroughNIO: true)
        let first = Task { try await transport.send(request(server.url("/held"))).firstValue() }
        #expect(await server.waitUntil { server.heldCount == 1 })
        var waiting: [Task<HTTPResponse, any Error>] = []
        for index in 0..<5 {
            waiting.append(Task { try await transport.send(request(server.url("/w\(index)"))).firstValue() })
            // Each one queued before the next is sent.
            #expect(await server.waitUntil { transport.pinnedConnections.waitingCount == index + 1 })
        }
        server.releaseHeld()
        #expect(try await first.value.text == "held")
        for task in waiting { _ = try await task.value }
        #expect(server.paths == ["/held"] + (0..<5).map { "/w\($0)" })
        #expect(transport.pinnedConnections.openedCount == 1)
        try await transport.shutdown()
    }

    @Test func aCancelledWaitingRequestLeavesTheQueue() async throws {
        let server = try HostileServer { request in
            request.index == 0 ? .held(HostileServer.ok("held")) : .reply(HostileServer.ok(request.path), thenClose: false)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(configuration: configuration(limit: 1), routesEverythingThroughNIO: true)
        let first = Task { try await transport.send(request(server.url("/held"))).firstValue() }
        #expect(await server.waitUntil { server.heldCount == 1 })
        let cancelled = transport.exchange(TransportRequest(request(server.url("/cancelled")))).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        #expect(await server.waitUntil { transport.pinnedConnections.waitingCount == 1 })
        cancelled.cancel()
        #expect(transport.pinnedConnections.waitingCount == 0)
        let after = Task { try await transport.send(request(server.url("/after"))).firstValue() }
        #expect(await server.waitUntil { transport.pinnedConnections.waitingCount == 1 })
        server.releaseHeld()
        _ = try await first.value
        #expect(try await after.value.text == "/after")
        #expect(server.paths == ["/held", "/after"])
        try await transport.shutdown()
    }
}

/// The handshake deadline of a pinned-path connection, in virtual time: a TLS connection whose
/// handshake has not completed within the connect timeout fails its readiness and is closed.
@Suite("Pinned path handshake deadline")
struct PinnedHandshakeDeadlineTests {
    @Test func aHandshakeNotCompleteAtTheDeadlineFailsAndClosesTheChannel() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let ready = loop.makePromise(of: Void.self)
        try channel.pipeline.syncOperations.addHandler(PinnedConnectionHandler(ready: ready, isTLS: true, handshakeTimeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let failure = NIOLockedValueBox<(any Error)?>(nil)
        ready.futureResult.whenFailure { error in failure.withLockedValue { $0 = error } }
        loop.advanceTime(by: .seconds(9))
        #expect(failure.withLockedValue { $0 } == nil)
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect((failure.withLockedValue { $0 } as? AsyncHTTPClient.HTTPClientError) == .tlsHandshakeTimeout)
        #expect(!channel.isActive)
    }

    @Test func aHandshakeCompleteBeforeTheDeadlineIsKept() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let ready = loop.makePromise(of: Void.self)
        try channel.pipeline.syncOperations.addHandler(PinnedConnectionHandler(ready: ready, isTLS: true, handshakeTimeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
        let succeeded = NIOLockedValueBox(false)
        ready.futureResult.whenSuccess { succeeded.withLockedValue { $0 = true } }
        loop.advanceTime(by: .seconds(20))
        #expect(succeeded.withLockedValue { $0 })
        #expect(channel.isActive)
        _ = try? channel.finish()
    }
}
