import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The checks through an ``HTTPClient`` over the transport: the rules the client enforces must hold
/// whatever the transport (it must stream, cancel and report failures as the seam promises).
extension TransportConformance {
    static let clientChecks: [Check] = [
        Check("client size limit", "HTTPClient's response limit fails a declared or a chunked oversized body with ResponseTooLargeError and closes its connection; a body at the limit passes.") { make in
            let transport = try await make()
            let client = HTTPClient(transport: transport) { $0.maxResponseBytes = 64 << 10 }
            try await withLoopbackServer { server in
                let hold = LoopbackGate("never")
                defer { hold.open() }
                let chunk = conformancePayload(48 << 10)
                let cases: [(String, LoopbackResponse, Int64?)] = [
                    ("declared 1 MiB", .scripted(contentLength: 1 << 20, [.head, .wait(hold), .send(chunk)]), 1 << 20),
                    ("chunked", .scripted([.send(chunk), .send(chunk), .wait(hold)]), nil),
                ]
                for (name, response, declared) in cases {
                    server.enqueue(response)
                    let closedBefore = server.clientClosedConnectionCount
                    do {
                        let response = try await client.send(URLRequest(url: server.url("/big"))).firstValue()
                        throw ConformanceFailure(check: "", message: "\(name): got \(response.data.count) bytes; expected ResponseTooLargeError")
                    } catch let error as ResponseTooLargeError {
                        try requireEqual(error.limit, 64 << 10, "limit reported (\(name))")
                        try requireEqual(error.declaredLength, declared, "declared length reported (\(name))")
                    } catch let failure as ConformanceFailure {
                        throw failure
                    } catch {
                        throw ConformanceFailure(check: "", message: "\(name): failed with \(describe(error)); expected ResponseTooLargeError")
                    }
                    let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount > closedBefore }
                    try require(closed, "\(name): the oversized transfer's connection was not closed")
                }
                let exact = conformancePayload(64 << 10)
                server.enqueue(.chunked([exact.prefix(1000), exact.dropFirst(1000)].map { Data($0) }))
                let response = try await client.send(URLRequest(url: server.url("/exact"))).firstValue()
                try require(response.data == exact, "a body of exactly the limit was not delivered whole (\(response.data.count) bytes)")
            }
        },

        Check("client deadline", "HTTPClient's total deadline fails a body that trickles in (each piece resetting no clock) with .timedOut and closes the connection.") { make in
            let transport = try await make()
            let scheduler = TestScheduler()
            let client = HTTPClient(transport: transport) {
                $0.deadline = .after(.seconds(1))
                $0.scheduler = scheduler
            }
            try await withLoopbackServer { server in
                let gates = (0..<3).map { LoopbackGate("trickle \($0)") }
                defer { gates.forEach { $0.open() } }
                let piece = conformancePayload(10)
                server.enqueue(.scripted([.send(piece), .wait(gates[0]), .send(piece), .wait(gates[1]), .send(piece), .wait(gates[2]), .send(piece)]))
                // Streamed, so each piece can be seen arriving while virtual time moves on.
                let recorder = PartRecorder(client.stream(URLRequest(url: server.url("/trickle")), options: RequestOptions(deadline: .after(.seconds(1)))), label: "trickling stream")
                for (index, gate) in gates.prefix(2).enumerated() {
                    try await recorder.waitForBody(atLeast: piece.count * (index + 1))
                    scheduler.advance(by: .milliseconds(400))
                    try require(recorder.completion == nil, "the stream ended \(400 * (index + 1)) ms into a 1 s deadline: \(recorder.summary)")
                    gate.open()
                }
                try await recorder.waitForBody(atLeast: piece.count * 3)
                scheduler.advance(by: .milliseconds(200))
                try await recorder.waitForFailure(.timedOut)
                try await server.waitUntilClosed(1, "the trickling stream's connection")

                // Buffered: the client's own deadline.
                let hold = LoopbackGate("hold")
                defer { hold.open() }
                server.enqueue(.scripted([.head, .wait(hold)]))
                let task = Task { try await client.send(URLRequest(url: server.url("/slow"))).firstValue() }
                try require(await hold.waitUntilReached(timeout: ConformanceTimeout.event), "the buffered request never reached the server")
                scheduler.advance(by: .seconds(1))
                do {
                    let response = try await task.value
                    throw ConformanceFailure(check: "", message: "the buffered request got status \(response.statusCode); expected URLError(.timedOut)")
                } catch let failure as ConformanceFailure {
                    throw failure
                } catch {
                    try require(urlErrorCode(of: error) == .timedOut, "the buffered request past its deadline failed with \(describe(error)); expected URLError(.timedOut)")
                }
                try await server.waitUntilClosed(2, "the buffered request's connection")
            }
        },

        Check("client redirects", "HTTPClient follows redirects over the transport: across origins without Authorization, Cookie or Proxy-Authorization; within an origin with them; 303 as GET, 307 repeating a file body.") { make in
            let transport = try await make()
            let client = HTTPClient(transport: transport)
            try await withLoopbackServer(handler: { .text("B \($0.method) \($0.path) \($0.body.count)") }) { other in
                try await withLoopbackServer { origin in
                    origin.enqueue(.status(302, headers: ["Location": other.url("/landing?from=a").absoluteString]), matching: { $0.path == "/start" })
                    origin.enqueue(.status(301, headers: ["Location": "/moved"]), matching: { $0.path == "/same" })
                    origin.enqueue(.text("A moved"), matching: { $0.path == "/moved" })
                    for path in ["/start", "/same"] {
                        var request = URLRequest(url: origin.url(path))
                        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
                        request.setValue("session=secret", forHTTPHeaderField: "Cookie")
                        request.setValue("Basic secret", forHTTPHeaderField: "Proxy-Authorization")
                        request.setValue("trace-1", forHTTPHeaderField: "X-Trace")
                        let response = try await client.send(request).firstValue()
                        try requireEqual(response.text, path == "/start" ? "B GET /landing 0" : "A moved", "final body after redirecting from \(path)")
                    }
                    let landing = try other.requests.first ?? { throw ConformanceFailure(check: "", message: "the other origin saw no request") }()
                    try requireEqual(landing.queryItems.first { $0.name == "from" }?.value, "a", "query of the redirected request")
                    for field in ["Authorization", "Cookie", "Proxy-Authorization"] {
                        try require(landing.value(forHTTPHeaderField: field) == nil, "\(field) was sent to another origin after a redirect")
                    }
                    try requireEqual(landing.value(forHTTPHeaderField: "X-Trace"), "trace-1", "X-Trace on the redirected request")
                    let moved = try origin.requests.first { $0.path == "/moved" } ?? { throw ConformanceFailure(check: "", message: "the same-origin redirect was not followed") }()
                    try requireEqual(moved.value(forHTTPHeaderField: "Authorization"), "Bearer secret", "Authorization within the origin")

                    // 303 after a POST continues as GET without the body; 307 repeats the file body.
                    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-conformance-\(UUID().uuidString)")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    defer { try? FileManager.default.removeItem(at: folder) }
                    let file = folder.appendingPathComponent("body.bin")
                    let payload = conformancePayload(200_000, seed: 7)
                    try payload.write(to: file)
                    origin.enqueue(.status(303, headers: ["Location": other.url("/see-other").absoluteString]), matching: { $0.path == "/post" })
                    origin.enqueue(.status(307, headers: ["Location": other.url("/temporary").absoluteString]), matching: { $0.path == "/put" })
                    var post = URLRequest(url: origin.url("/post"))
                    post.httpMethod = "POST"
                    post.httpBody = Data("form=1".utf8)
                    try requireEqual(try await client.send(post).firstValue().text, "B GET /see-other 0", "303 after POST")
                    var put = URLRequest(url: origin.url("/put"))
                    put.httpMethod = "PUT"
                    try requireEqual(try await client.send(put, bodyFile: file).firstValue().text, "B PUT /temporary 200000", "307 after a PUT of a file")
                    let repeated = try other.requests.first { $0.path == "/temporary" } ?? { throw ConformanceFailure(check: "", message: "the 307 was not followed") }()
                    try require(repeated.body == payload, "the file body repeated after 307 differs from the file")
                }
            }
        },
    ]
}

extension LoopbackServer {
    /// Waits until the client closed `count` connections in all; throws naming `what` otherwise.
    func waitUntilClosed(_ count: Int, _ what: String) async throws {
        let closed = await waitUntil(timeout: ConformanceTimeout.event) { self.clientClosedConnectionCount >= count }
        try require(closed, "\(what) was not closed (client closed \(clientClosedConnectionCount) of \(count) expected)")
    }
}
