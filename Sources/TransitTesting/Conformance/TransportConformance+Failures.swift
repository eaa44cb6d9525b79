import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The checks of exchanges that do not complete: cancellation, lost connections, stalls and
/// garbage, each with the `URLError` code every transport must give.
extension TransportConformance {
    static let failureChecks: [Check] = [
        Check("cancel before head", "Cancelling while the server holds the response closes the connection; nothing is delivered after the cancel.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let hold = LoopbackGate("before head")
                server.enqueue(.scripted([.wait(hold), .head, .send(Data("late".utf8))]))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/slow")))))
                defer { hold.open() }
                try require(await hold.waitUntilReached(timeout: ConformanceTimeout.event), "the request never reached the server")
                recorder.cancel()
                let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount >= 1 }
                try require(closed, "the server did not see the connection closed after the cancel (open: \(server.openConnectionCount))")
                try requireEqual(recorder.eventsAfterCancel, 0, "events delivered after the cancel")
                try require(recorder.head == nil && recorder.completion == nil, "cancelled exchange delivered \(recorder.summary)")
            }
        },

        Check("cancel mid-body", "Cancelling after the first body bytes closes the connection; nothing is delivered after the cancel.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for chunked in [false, true] {
                    let hold = LoopbackGate("mid-body")
                    let first = conformancePayload(10_000)
                    server.enqueue(.scripted(contentLength: chunked ? nil : 20_000, [.send(first), .wait(hold), .send(first)]))
                    let label = chunked ? "chunked body" : "Content-Length body"
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/slow")))), label: label)
                    defer { hold.open() }
                    try await recorder.waitForBody(atLeast: first.count)
                    let closedBefore = server.clientClosedConnectionCount
                    recorder.cancel()
                    let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount > closedBefore }
                    try require(closed, "the server did not see the connection closed after the cancel (\(label))")
                    hold.open()
                    try requireEqual(recorder.eventsAfterCancel, 0, "events delivered after the cancel (\(label))")
                    try require(recorder.completion == nil, "\(label): the cancelled exchange ended: \(recorder.summary)")
                    try requireEqual(recorder.byteCount, first.count, "body bytes delivered (\(label))")
                }
            }
        },

        Check("closed mid-body", "A connection closed before the announced body is complete fails with .networkConnectionLost, after the head and the bytes that came.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for chunked in [false, true] {
                    let part = conformancePayload(40_000)
                    server.enqueue(.scripted(contentLength: chunked ? nil : 100_000, [.send(part), .close]))
                    let label = chunked ? "chunked body closed mid-body" : "Content-Length body closed mid-body"
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/truncated")))), label: label)
                    try await recorder.waitForFailure(.networkConnectionLost)
                    try requireEqual(recorder.head?.statusCode, 200, "status delivered before the failure (\(label))")
                    try require(recorder.byteCount <= part.count, "\(label): \(recorder.byteCount) bytes delivered; the server sent \(part.count)")
                }
            }
        },

        Check("reset mid-body", "A connection reset (TCP RST) after part of the body fails with .networkConnectionLost.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let hold = LoopbackGate("before reset")
                let part = conformancePayload(20_000)
                server.enqueue(.scripted(contentLength: 100_000, [.send(part), .wait(hold), .reset]))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/reset")))))
                defer { hold.open() }
                try await recorder.waitForBody(atLeast: part.count)
                hold.open()
                try await recorder.waitForFailure(.networkConnectionLost)
            }
        },

        Check("dropped before response", "A connection closed or reset before any response fails with .networkConnectionLost.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for (name, response) in [("closed", LoopbackResponse.dropConnection), ("reset", .scripted([.reset, .head]))] {
                    server.enqueue(response)
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/drop")))), label: "connection \(name) before the response")
                    try await recorder.waitForFailure(.networkConnectionLost)
                    try require(recorder.head == nil, "a head was delivered for a connection \(name) before the response")
                }
            }
        },

        Check("connection refused", "A port nothing listens on fails with .cannotConnectToHost.") { make in
            let transport = try await make()
            let server = LoopbackServer()
            try server.start()
            let url = server.url("/refused")
            server.stop()
            try await PartRecorder(transport.exchange(TransportRequest(URLRequest(url: url))), label: "request to a closed port").waitForFailure(.cannotConnectToHost)
        },

        Check("stalled server", "A server silent for URLRequest.timeoutInterval, before the head or mid-body, fails the exchange with .timedOut and the connection is closed.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let hold = LoopbackGate("stall")
                defer { hold.open() }
                let part = conformancePayload(5000)
                for (name, response) in [
                    ("before the head", LoopbackResponse.scripted([.wait(hold), .head])),
                    ("mid-body", .scripted(contentLength: 10_000, [.send(part), .wait(hold)])),
                ] {
                    server.enqueue(response)
                    var request = URLRequest(url: server.url("/stall"))
                    request.timeoutInterval = 1
                    let closedBefore = server.clientClosedConnectionCount
                    let start = ContinuousClock.now
                    let recorder = PartRecorder(transport.exchange(TransportRequest(request)), label: "server stalled \(name)")
                    try await recorder.waitForFailure(.timedOut)
                    let elapsed = ContinuousClock.now - start
                    try require(elapsed >= .milliseconds(500), "server stalled \(name): timed out after \(elapsed), before the 1 s timeout")
                    let closed = await server.waitUntil(timeout: ConformanceTimeout.event) { server.clientClosedConnectionCount > closedBefore }
                    try require(closed, "server stalled \(name): the connection stayed open after the timeout")
                }
            }
        },

        Check("slow body within timeout", "A body that keeps arriving, each piece within URLRequest.timeoutInterval, is not timed out even when the whole takes longer.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let piece = conformancePayload(100)
                let steps = (0..<8).flatMap { _ in [LoopbackStep.pause(.milliseconds(250)), .send(piece)] }
                server.enqueue(.scripted(steps))
                var request = URLRequest(url: server.url("/trickle"))
                request.timeoutInterval = 1.5
                let start = ContinuousClock.now
                let (_, body) = try await PartRecorder(transport.exchange(TransportRequest(request)), label: "trickling body").waitForSuccess()
                try requireEqual(body.count, 800, "body bytes")
                try require(ContinuousClock.now - start >= .seconds(1.5), "the trickle took less than the timeout; the check proves nothing")
            }
        },

        Check("not HTTP", "A reply that is not HTTP fails with .cannotParseResponse.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                server.enqueue(.raw(Data("SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n".utf8)))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/garbage")))), label: "a reply that is not HTTP")
                try await recorder.waitForFailure(.cannotParseResponse)
            }
        },

        Check("no URL", "A request without a URL fails with .badURL and sends nothing.") { make in
            let transport = try await make()
            var request = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
            request.url = nil
            try await PartRecorder(transport.exchange(TransportRequest(request)), label: "a request without a URL").waitForFailure(.badURL, timeout: .seconds(5))
        },
    ]
}
