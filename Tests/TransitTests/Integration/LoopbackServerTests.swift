import Foundation
import Testing
import TransitTesting

/// The loopback server on its own, driven by a raw socket client so every byte is under the
/// test's control. Wall-clock tests: bounded waits on real conditions, no sleeps.
@Suite("LoopbackServer")
struct LoopbackServerTests {
    @Test func startsOnAnEphemeralLoopbackPortAndStopsListening() async throws {
        let server = LoopbackServer()
        #expect(server.port == 0)
        #expect(!server.isRunning)
        try server.start()
        let port = server.port
        #expect(port > 0)
        #expect(server.isRunning)
        #expect(server.url().absoluteString == "http://127.0.0.1:\(port)")
        #expect(server.url("/a?b=1").absoluteString == "http://127.0.0.1:\(port)/a?b=1")
        _ = try RawConnection(port: port)
        server.stop()
        #expect(!server.isRunning)
        #expect(throws: RawConnection.Failure.self) { try RawConnection(port: port) }
        server.stop() // a second stop does nothing
    }

    @Test func startingTwiceThrows() throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        let error = #expect(throws: LoopbackServer.StartError.self) { try server.start() }
        #expect(error?.description.contains("starts once") == true)
    }

    @Test func aNewServerComesBackOnTheStoppedOnesPortAfterItsConnectionsClosed() async throws {
        let first = LoopbackServer()
        first.enqueue(.text("first"))
        try first.start()
        let port = first.port
        // A kept-alive exchange, so the stopped server's side of the connection is closed first
        // (its socket then lingers in TIME_WAIT, which SO_REUSEADDR lets a new listener pass).
        let connection = try RawConnection(port: port)
        try connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse().text == "first")
        first.stop()
        #expect(throws: RawConnection.Failure.self) { try RawConnection(port: port) }

        let second = LoopbackServer()
        second.enqueue(.text("second"))
        try second.start(onPort: port)
        defer { second.stop() }
        #expect(second.port == port)
        let again = try RawConnection(port: port)
        try again.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try again.readResponse().text == "second")
    }

    @Test func startingOnABusyOrImpossiblePortThrows() throws {
        let busy = LoopbackServer()
        try busy.start()
        defer { busy.stop() }
        let taken = #expect(throws: LoopbackServer.StartError.self) { try LoopbackServer().start(onPort: busy.port) }
        #expect(taken?.step == "bind" && taken?.errorNumber == EADDRINUSE)
        for port in [0, -1, 65_536] {
            let refused = #expect(throws: LoopbackServer.StartError.self) { try LoopbackServer().start(onPort: port) }
            #expect(refused?.step == "port")
        }
    }

    @Test func releasingTheServerStopsIt() throws {
        var server: LoopbackServer? = LoopbackServer()
        try server!.start()
        let port = server!.port
        weak let weakServer = server
        server = nil
        #expect(weakServer == nil)
        #expect(throws: RawConnection.Failure.self) { try RawConnection(port: port) }
    }

    @Test func recordsMethodPathQueryHeadersAndBody() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("ok"))
            let connection = try RawConnection(port: server.port)
            try connection.send("POST /posts/7?sort=new&q=a%20b HTTP/1.1\r\nHost: x\r\nX-Custom: One\r\nContent-Length: 5\r\n\r\nhello")
            let response = try connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "ok")
            let request = try #require(server.requests.first)
            #expect(request.method == "POST")
            #expect(request.target == "/posts/7?sort=new&q=a%20b")
            #expect(request.path == "/posts/7")
            #expect(request.query == "sort=new&q=a%20b")
            #expect(request.queryItems.first { $0.name == "q" }?.value == "a b")
            #expect(request.queryItems.map(\.name) == ["sort", "q"])
            #expect(request.pathComponents == ["posts", "7"])
            #expect(request.value(forHTTPHeaderField: "x-custom") == "One")
            #expect(request.headers.map(\.name) == ["Host", "X-Custom", "Content-Length"])
            #expect(String(data: request.body, encoding: .utf8) == "hello")
            #expect(request.connectionID == 1)
        }
    }

    @Test func splitsTargetsIntoPathAndQuery() {
        let absolute = LoopbackRequest(method: "GET", target: "http://127.0.0.1:8080/p/a%2Fb?q=1")
        #expect(absolute.path == "/p/a%2Fb")
        #expect(absolute.query == "q=1")
        #expect(absolute.pathComponents == ["p", "a/b"])
        let bare = LoopbackRequest(method: "GET", target: "http://127.0.0.1:8080")
        #expect(bare.path == "/")
        #expect(bare.query == nil)
        let odd = LoopbackRequest(method: "GET", target: "/x?a=1&b&&c=%ZZ&d=")
        #expect(odd.queryItems.map(\.name) == ["a", "b", "c", "d"])
        #expect(odd.queryItems.map(\.value) == ["1", nil, "%ZZ", ""])
        #expect(LoopbackRequest(method: "GET", target: "/").queryItems.isEmpty)
    }

    @Test func servesSeveralRequestsOnOneKeptAliveConnection() async throws {
        try await withLoopbackServer(handler: { .text("you asked for \($0.path)") }) { server in
            let connection = try RawConnection(port: server.port)
            // Two pipelined requests, then a third after the first two were answered.
            try connection.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            #expect(try connection.readResponse().text == "you asked for /one")
            #expect(try connection.readResponse().text == "you asked for /two")
            try connection.send("GET /three HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try connection.readResponse().text == "you asked for /three")
            #expect(server.requests.map(\.path) == ["/one", "/two", "/three"])
            #expect(Set(server.requests.map(\.connectionID)) == [1])
            #expect(server.connectionCount == 1)
            #expect(server.openConnectionCount == 1)
            #expect(String(data: server.requests[1].body, encoding: .utf8) == "abc")
        }
    }

    @Test func closesAfterTheResponseWhenTheClientAsksOrSpeaksHTTP10() async throws {
        try await withLoopbackServer(handler: { _ in .text("bye") }) { server in
            for request in ["GET / HTTP/1.1\r\nConnection: close\r\n\r\n", "GET / HTTP/1.0\r\n\r\n"] {
                let connection = try RawConnection(port: server.port)
                try connection.send(request)
                let response = try connection.readResponse()
                #expect(response.header("Connection") == "close")
                #expect(try connection.readToEnd().isEmpty)
                #expect(connection.sawEndOfStream)
            }
        }
    }

    @Test func decodesChunkedRequestBodies() async throws {
        try await withLoopbackServer(handler: { .text("\($0.body.count)") }) { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
            #expect(try connection.readResponse().text == "11")
            #expect(server.requests.first.flatMap { String(data: $0.body, encoding: .utf8) } == "hello world")
        }
    }

    @Test func answersExpectContinueBeforeTheBodyIsSent() async throws {
        try await withLoopbackServer(handler: { .text(String(decoding: $0.body, as: UTF8.self)) }) { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("POST /upload HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            #expect(try connection.readResponse().status == 100)
            try connection.send("data")
            #expect(try connection.readResponse().text == "data")
        }
    }

    @Test(arguments: [
        "NOT HTTP AT ALL\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        "GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\nHost: x\n\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "GET nothing HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY",
        "GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n",
        "\u{0}\u{1}\u{2}\r\n\r\n",
    ])
    func rejectsMalformedRequestsWith400AndCloses(request: String) async throws {
        try await withLoopbackServer(handler: { _ in .text("should not be called") }) { server in
            let connection = try RawConnection(port: server.port)
            try connection.send(request)
            let response = try connection.readResponse()
            #expect(response.status == 400)
            #expect(response.text.hasPrefix("LoopbackServer: "))
            #expect(response.header("Connection") == "close")
            #expect(try connection.readToEnd().isEmpty)
            #expect(server.requests.isEmpty)
            // The server is unharmed: the next connection is served.
            let next = try RawConnection(port: server.port)
            try next.send("GET /fine HTTP/1.1\r\n\r\n")
            #expect(try next.readResponse().text == "should not be called")
        }
    }

    @Test func rejectsWhatItDoesNotImplementWithTheRightStatus() async throws {
        try await withLoopbackServer { server in
            let cases: [(String, Int)] = [
                ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
                ("GET / HTTP/2.0\r\n\r\n", 505),
                ("GET / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", 413),
                ("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 70_000), 431),
            ]
            for (request, status) in cases {
                let connection = try RawConnection(port: server.port)
                try connection.send(request)
                #expect(try connection.readResponse().status == status, "\(request.prefix(40))")
            }
        }
    }

    @Test func queuedResponsesGoFirstInOrderThenTheHandler() async throws {
        try await withLoopbackServer(handler: { .text("handler \($0.path)") }) { server in
            server.enqueue([.text("first"), .text("second", status: 201)])
            server.enqueue(.text("only for /special"), matching: { $0.path == "/special" })
            #expect(server.queuedResponseCount == 3)
            let connection = try RawConnection(port: server.port)
            var texts: [String] = []
            for path in ["/a", "/b", "/c", "/special", "/special"] {
                try connection.send("GET \(path) HTTP/1.1\r\n\r\n")
                texts.append(try connection.readResponse().text)
            }
            #expect(texts == ["first", "second", "handler /c", "only for /special", "handler /special"])
            #expect(server.queuedResponseCount == 0)
            #expect(server.requests.count == 5)
            server.clearRequests()
            #expect(server.requests.isEmpty)
        }
    }

    @Test func withNothingQueuedAndNoHandlerAnswers404NamingTheRequest() async throws {
        try await withLoopbackServer { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("DELETE /x?y HTTP/1.1\r\n\r\n")
            let response = try connection.readResponse()
            #expect(response.status == 404)
            #expect(response.text.contains("DELETE /x?y"))
        }
    }

    @Test func writesStatusReasonHeadersAndFraming() async throws {
        try await withLoopbackServer { server in
            var custom = LoopbackResponse.status(418, headers: ["X-One": "1"], body: Data("tea".utf8))
            custom.reason = "I'm a teapot"
            server.enqueue(custom)
            server.enqueue(.status(204))
            server.enqueue(.text("not sent for HEAD"))
            let connection = try RawConnection(port: server.port)
            try connection.send("GET / HTTP/1.1\r\n\r\n")
            let first = try connection.readResponse()
            #expect(first.status == 418)
            #expect(first.header("X-One") == "1")
            #expect(first.header("Content-Length") == "3")
            #expect(first.text == "tea")
            try connection.send("GET / HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\n\r\n")
            #expect(try connection.readResponse().status == 204)
            let head = try connection.readResponse(toHEAD: true)
            #expect(head.header("Content-Length") == "17")
            // HEAD carries no body: the connection has nothing more to read.
            #expect(head.body.isEmpty)
            #expect(connection.buffer.isEmpty)
        }
    }

    @Test func sendsChunkedBodiesChunkByChunk() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.chunked([Data("ab".utf8), Data(), Data("cde".utf8)], interval: .milliseconds(20)))
            let connection = try RawConnection(port: server.port)
            try connection.send("GET / HTTP/1.1\r\n\r\n")
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while !String(decoding: connection.buffer, as: UTF8.self).hasSuffix("0\r\n\r\n") {
                try connection.readMore(until: deadline)
            }
            let wire = String(decoding: connection.buffer, as: UTF8.self)
            #expect(wire.contains("Transfer-Encoding: chunked\r\n"))
            #expect(wire.hasSuffix("\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n"))
        }
    }

    @Test func closesMidBodyAfterTheGivenBytes() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("0123456789").closingMidBody(afterBytes: 4))
            server.enqueue(.chunked([Data("abc".utf8), Data("def".utf8)]).closingMidBody(afterBytes: 4))
            for expectedTail in ["\r\n\r\n0123", "\r\n\r\n3\r\nabc\r\n3\r\nd"] {
                let connection = try RawConnection(port: server.port)
                try connection.send("GET / HTTP/1.1\r\n\r\n")
                let wire = String(decoding: try connection.readToEnd(), as: UTF8.self)
                #expect(wire.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(wire.hasSuffix(expectedTail))
            }
        }
    }

    @Test func sendsRawBytesAsTheyAre() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.raw(Data("HTTP/1.1 299 Odd\r\nX: y\r\n\r\nno length".utf8)))
            let connection = try RawConnection(port: server.port)
            try connection.send("GET / HTTP/1.1\r\n\r\n")
            #expect(String(decoding: try connection.readToEnd(), as: UTF8.self) == "HTTP/1.1 299 Odd\r\nX: y\r\n\r\nno length")
        }
    }

    @Test func dropsTheConnectionWithoutAnswering() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.dropConnection)
            let connection = try RawConnection(port: server.port)
            try connection.send("GET / HTTP/1.1\r\n\r\n")
            #expect(try connection.readToEnd().isEmpty)
            #expect(server.requests.count == 1)
        }
    }

    @Test func observesAClientClosingWhileItWaitsToAnswer() async throws {
        try await withLoopbackServer { server in
            server.enqueue(.text("too late").delayed(by: .seconds(60)))
            let connection = try RawConnection(port: server.port)
            try connection.send("GET /slow HTTP/1.1\r\n\r\n")
            #expect(await server.waitUntil { server.requests.count == 1 })
            #expect(server.clientClosedConnectionCount == 0)
            connection.close()
            #expect(await server.waitUntil { server.clientClosedConnectionCount == 1 })
            #expect(server.openConnectionCount == 0)
        }
    }

    @Test func stopIsImmediateEvenWhileAResponseIsDelayedOrTrickling() async throws {
        let server = LoopbackServer()
        try server.start()
        server.enqueue(.text("never").delayed(by: .seconds(600)), matching: { $0.path == "/delayed" })
        server.enqueue(.chunked([Data("a".utf8), Data("b".utf8)], interval: .seconds(600)), matching: { $0.path == "/trickle" })
        let slow = try RawConnection(port: server.port)
        try slow.send("GET /delayed HTTP/1.1\r\n\r\n")
        let trickle = try RawConnection(port: server.port)
        try trickle.send("GET /trickle HTTP/1.1\r\n\r\n")
        let idle = try RawConnection(port: server.port)
        #expect(await server.waitUntil { server.requests.count == 2 && server.connectionCount == 3 })
        let clock = ContinuousClock()
        let elapsed = clock.measure { server.stop() }
        #expect(elapsed < .seconds(10)) // the delays were 600 s; stop did not wait for them
        #expect(server.openConnectionCount == 0)
        #expect(try slow.readToEnd().isEmpty)
        #expect(try idle.readToEnd().isEmpty)
        #expect(try trickle.readToEnd().count > 0) // the head and first chunk, then the close
    }

    @Test func waitUntilGivesUpAfterItsTimeout() async throws {
        try await withLoopbackServer { server in
            let satisfied = await server.waitUntil(timeout: .milliseconds(50)) { server.requests.count == 1 }
            #expect(!satisfied)
        }
    }

    @Test func handlesManyConnectionsAtOnce() async throws {
        try await withLoopbackServer(handler: { .text($0.path) }) { server in
            let port = server.port
            let texts = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let connection = try RawConnection(port: port)
                        try connection.send("GET /\(index) HTTP/1.1\r\n\r\n")
                        return try connection.readResponse().text
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(texts == Set((0..<40).map { "/\($0)" }))
            #expect(server.connectionCount == 40)
        }
    }
}
