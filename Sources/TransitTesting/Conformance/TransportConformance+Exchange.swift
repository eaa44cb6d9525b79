import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The checks of one exchange that succeeds: what is sent, what is delivered, and in what order.
extension TransportConformance {
    static let exchangeChecks: [Check] = [
        Check("status codes", "Every status is delivered as a response with its headers and body, unchanged; a HEAD response has no body.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for status in [200, 201, 202, 203, 204, 206, 304, 400, 401, 403, 404, 409, 410, 418, 422, 429, 451, 500, 502, 503, 504, 599] {
                    let hasBody = status != 204 && status != 304
                    server.enqueue(.status(status, headers: ["X-Status": "\(status)"], body: hasBody ? Data("status \(status)".utf8) : Data()))
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/status/\(status)")))), label: "GET /status/\(status)")
                    let (head, body) = try await recorder.waitForSuccess()
                    try requireEqual(head.statusCode, status, "status")
                    try requireEqual(head.value(forHTTPHeaderField: "x-status"), "\(status)", "X-Status header of \(status)")
                    try requireEqual(String(decoding: body, as: UTF8.self), hasBody ? "status \(status)" : "", "body of \(status)")
                    try require(head.url.path == "/status/\(status)", "the head's URL is \(head.url.absoluteString); expected the request's")
                }
                server.enqueue(.status(200, headers: ["X-Head": "yes"], body: Data("hello".utf8)))
                var request = URLRequest(url: server.url("/head"))
                request.httpMethod = "HEAD"
                let recorder = PartRecorder(transport.exchange(TransportRequest(request)), label: "HEAD /head")
                let (head, body) = try await recorder.waitForSuccess()
                try requireEqual(head.statusCode, 200, "status of HEAD")
                try requireEqual(head.value(forHTTPHeaderField: "X-Head"), "yes", "X-Head header")
                try requireEqual(body.count, 0, "body bytes of a HEAD response")
                try requireEqual(server.requests.last?.method, "HEAD", "method the server saw")
            }
        },

        Check("request as sent", "The method, the percent-encoded target, every header (odd and long ones too) and the body reach the server exactly.") { make in
            let transport = try await make()
            try await withLoopbackServer(handler: { _ in .status(201) }) { server in
                let long = String(repeating: "abcdefgh", count: 1024)
                let odd = #"value with "quotes", commas; semicolons = and/slashes"#
                for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
                    var request = URLRequest(url: server.url("/a%20b/c%2Fd?x=1&y=%26%3D&z"))
                    request.httpMethod = method
                    if method != "GET" {
                        request.httpBody = Data(#"{"method":"\#(method)"}"#.utf8)
                        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    }
                    request.setValue("Bearer t0k3n", forHTTPHeaderField: "Authorization")
                    request.setValue("session=abc; theme=dark", forHTTPHeaderField: "Cookie")
                    request.setValue(odd, forHTTPHeaderField: "X-Odd")
                    request.setValue(long, forHTTPHeaderField: "X-Long")
                    request.setValue("MiXeD", forHTTPHeaderField: "x-mixed-CASE")
                    let recorder = PartRecorder(transport.exchange(TransportRequest(request)), label: "\(method) request")
                    let (head, _) = try await recorder.waitForSuccess()
                    try requireEqual(head.statusCode, 201, "status")
                }
                let requests = server.requests
                try requireEqual(requests.map(\.method), ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], "methods the server saw")
                for request in requests {
                    try requireEqual(request.target, "/a%20b/c%2Fd?x=1&y=%26%3D&z", "target of \(request.method)")
                    try requireEqual(request.value(forHTTPHeaderField: "Authorization"), "Bearer t0k3n", "Authorization of \(request.method)")
                    try requireEqual(request.value(forHTTPHeaderField: "Cookie"), "session=abc; theme=dark", "Cookie of \(request.method)")
                    try requireEqual(request.value(forHTTPHeaderField: "X-Odd"), odd, "X-Odd of \(request.method)")
                    try requireEqual(request.value(forHTTPHeaderField: "X-Long"), long, "X-Long of \(request.method)")
                    try requireEqual(request.value(forHTTPHeaderField: "X-Mixed-Case"), "MiXeD", "X-Mixed-Case of \(request.method)")
                    try requireEqual(request.headers.value(for: "Host"), "127.0.0.1:\(server.port)", "Host of \(request.method)")
                    if request.method == "GET" {
                        try requireEqual(request.body.count, 0, "body bytes of GET")
                    } else {
                        try requireEqual(request.text, #"{"method":"\#(request.method)"}"#, "body of \(request.method)")
                        try requireEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/json", "Content-Type of \(request.method)")
                        try requireEqual(request.value(forHTTPHeaderField: "Content-Length"), "\(request.body.count)", "Content-Length of \(request.method)")
                    }
                }
            }
        },

        Check("response headers", "Names match case-insensitively; long values and odd characters survive; leading spaces are not part of a value.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let long = String(repeating: "0123456789abcdef", count: 512)
                server.enqueue(LoopbackResponse(status: 200, headers: [
                    HTTPField(name: "X-Lower-Case", value: "v"),
                    HTTPField(name: "x-spaced", value: "   padded value"),
                    HTTPField(name: "X-Long", value: long),
                    HTTPField(name: "X-Odd", value: #"a="b, c"; d=/e?f"#),
                    HTTPField(name: "Content-Type", value: "text/plain; charset=utf-8"),
                ], body: .whole(Data("ok".utf8))))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/headers")))))
                let (head, body) = try await recorder.waitForSuccess()
                try requireEqual(head.value(forHTTPHeaderField: "X-LOWER-CASE"), "v", "X-Lower-Case")
                try requireEqual(head.value(forHTTPHeaderField: "X-Spaced"), "padded value", "X-Spaced (leading spaces are not part of a value)")
                try requireEqual(head.value(forHTTPHeaderField: "X-Long"), long, "X-Long")
                try requireEqual(head.value(forHTTPHeaderField: "X-Odd"), #"a="b, c"; d=/e?f"#, "X-Odd")
                try requireEqual(head.value(forHTTPHeaderField: "Content-Type"), "text/plain; charset=utf-8", "Content-Type")
                try requireEqual(head.expectedContentLength, 2, "expectedContentLength")
                try requireEqual(String(decoding: body, as: UTF8.self), "ok", "body")
            }
        },

        Check("repeated response headers", "A field sent several times is delivered as sent: each value in order (values(forHTTPHeaderField:)), and joined with \", \" by value(forHTTPHeaderField:) (RFC 9110 §5.3).") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                server.enqueue(LoopbackResponse(status: 200, headers: [
                    HTTPField(name: "X-Repeated", value: "one"),
                    HTTPField(name: "x-repeated", value: "two"),
                    HTTPField(name: "Cache-Control", value: "no-cache"),
                    HTTPField(name: "Cache-Control", value: "no-store"),
                ]))
                let (head, _) = try await PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/repeated"))))).waitForSuccess()
                try requireEqual(head.value(forHTTPHeaderField: "X-REPEATED"), "one, two", "repeated X-Repeated")
                try requireEqual(head.values(forHTTPHeaderField: "x-repeated"), ["one", "two"], "X-Repeated's values, one per field")
                try requireEqual(head.value(forHTTPHeaderField: "Cache-Control"), "no-cache, no-store", "repeated Cache-Control")
            }
        },

        Check("empty bodies", "A zero-length, a 204, an empty chunked body and a HEAD response deliver the head and finish with no body part.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let cases: [(String, LoopbackResponse, String)] = [
                    ("content-length 0", .status(200), "GET"),
                    ("204", .status(204), "GET"),
                    ("empty chunked", .chunked([]), "GET"),
                    ("HEAD", .status(200, body: Data("not sent".utf8)), "HEAD"),
                    ("201 to POST", .status(201), "POST"),
                ]
                for (name, response, method) in cases {
                    server.enqueue(response)
                    var request = URLRequest(url: server.url("/empty"))
                    request.httpMethod = method
                    let recorder = PartRecorder(transport.exchange(TransportRequest(request)), label: name)
                    _ = try await recorder.waitForSuccess()
                    try requireEqual(recorder.chunks.count, 0, "body parts of \(name)")
                }
            }
        },

        Check("large body", "An 8 MiB body arrives whole and in order, in non-empty chunks.") { make in
            let transport = try await make()
            let payload = conformancePayload(8 << 20)
            try await withLoopbackServer { server in
                server.enqueue(.status(200, headers: ["Content-Type": "application/octet-stream"], body: payload))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/large")))))
                let (head, body) = try await recorder.waitForSuccess()
                try requireEqual(head.expectedContentLength, Int64(payload.count), "expectedContentLength")
                try requireEqual(body.count, payload.count, "body bytes")
                try require(body == payload, "the body's bytes differ from those sent")
            }
        },

        Check("chunked body", "A chunked body of 64 chunks from 1 byte to 70 KB arrives whole and in order.") { make in
            let transport = try await make()
            let sizes = (0..<64).map { [1, 7, 100, 1000, 4096, 16_384, 70_000, 3][$0 % 8] + $0 }
            var chunks: [Data] = []
            var offset = 0
            let payload = conformancePayload(sizes.reduce(0, +), seed: 42)
            for size in sizes {
                chunks.append(payload.subdata(in: offset..<offset + size))
                offset += size
            }
            let sent = chunks
            try await withLoopbackServer { server in
                server.enqueue(.chunked(sent))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/chunked")))))
                let (head, body) = try await recorder.waitForSuccess()
                try requireEqual(head.value(forHTTPHeaderField: "Transfer-Encoding")?.lowercased(), "chunked", "Transfer-Encoding")
                try requireEqual(body.count, payload.count, "body bytes")
                try require(body == payload, "the body's bytes differ from those sent")
            }
        },

        Check("close-delimited body", "A body without Content-Length or chunking ends when the server closes the connection, and is complete.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                server.enqueue(.raw(Data("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end".utf8)))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/close")))))
                let (head, body) = try await recorder.waitForSuccess()
                try requireEqual(head.statusCode, 200, "status")
                try requireEqual(String(decoding: body, as: UTF8.self), "until the end", "body")
            }
        },

        Check("streaming order", "The head is delivered before the server sends any body byte, and each chunk before the server sends the next.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for chunked in [false, true] {
                    let afterHead = LoopbackGate("after head")
                    let afterFirst = LoopbackGate("after first chunk")
                    let first = conformancePayload(1000, seed: 1)
                    let second = conformancePayload(3000, seed: 2)
                    server.enqueue(.scripted(contentLength: chunked ? nil : 4000, [.head, .wait(afterHead), .send(first), .wait(afterFirst), .send(second)]))
                    let label = chunked ? "chunked body" : "Content-Length body"
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/stream")))), label: label)
                    defer { afterHead.open(); afterFirst.open() }
                    let head = try await recorder.waitForHead()
                    try requireEqual(head.statusCode, 200, "status")
                    // The server is held at the gate: no body byte has been sent yet.
                    try requireEqual(recorder.byteCount, 0, "body bytes delivered with the head (\(label))")
                    try require(recorder.completion == nil, "\(label) ended before its body was sent: \(recorder.summary)")
                    afterHead.open()
                    try await recorder.waitForBody(atLeast: first.count)
                    try requireEqual(recorder.byteCount, first.count, "body bytes before the second chunk was sent (\(label))")
                    afterFirst.open()
                    let (_, body) = try await recorder.waitForSuccess()
                    try require(body == first + second, "the body's bytes differ from those sent (\(label))")
                }
            }
        },

        Check("redirects unfollowed", "A 301, 302, 303, 307 or 308 is delivered as the response with its Location; nothing is sent to the target.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                for status in [301, 302, 303, 307, 308] {
                    server.enqueue(.status(status, headers: ["Location": "/target"], body: Data("moved".utf8)), matching: { $0.path == "/from" })
                    var request = URLRequest(url: server.url("/from"))
                    request.httpMethod = "POST"
                    request.httpBody = Data("payload".utf8)
                    let recorder = PartRecorder(transport.exchange(TransportRequest(request)), label: "POST answered \(status)")
                    let (head, body) = try await recorder.waitForSuccess()
                    try requireEqual(head.statusCode, status, "status")
                    try requireEqual(head.value(forHTTPHeaderField: "Location"), "/target", "Location of \(status)")
                    try requireEqual(String(decoding: body, as: UTF8.self), "moved", "body of \(status)")
                }
                try requireEqual(server.requests.map(\.path), Array(repeating: "/from", count: 5), "paths the server saw")
            }
        },

        Check("upload from file", "A body file is sent exactly (httpBody is ignored when a file is given), for a large and a small file.") { make in
            let transport = try await make()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-conformance-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withLoopbackServer(handler: { .text("\($0.body.count)", status: 201) }) { server in
                for size in [3 << 20 | 12_345, 10] {
                    let payload = conformancePayload(size, seed: UInt64(size))
                    let file = folder.appendingPathComponent("upload-\(size).bin")
                    try payload.write(to: file)
                    var request = URLRequest(url: server.url("/upload"))
                    request.httpMethod = "PUT"
                    request.httpBody = Data("ignored".utf8)
                    request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
                    let recorder = PartRecorder(transport.exchange(TransportRequest(request, bodyFile: file)), label: "upload of \(size) bytes")
                    let (head, body) = try await recorder.waitForSuccess()
                    try requireEqual(head.statusCode, 201, "status")
                    try requireEqual(String(decoding: body, as: UTF8.self), "\(size)", "byte count the server answered")
                    let received = try server.requests.last.map(\.body) ?? { throw ConformanceFailure(check: "", message: "the server saw no request") }()
                    try requireEqual(received.count, size, "bytes the server received")
                    try require(received == payload, "the uploaded bytes differ from the file's")
                    try requireEqual(try Data(contentsOf: file), payload, "the file after the upload")
                }
            }
        },

        Check("cold and repeatable", "Nothing is sent before a subscription; every subscription sends the request again.") { make in
            let transport = try await make()
            try await withLoopbackServer(handler: { .text($0.path) }) { server in
                let signal = transport.exchange(TransportRequest(URLRequest(url: server.url("/cold"))))
                // Another exchange's round trip gives an unsubscribed request every chance to go out.
                _ = try await PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/other"))))).waitForSuccess()
                try requireEqual(server.requests.map(\.path), ["/other"], "paths the server saw before subscribing")
                for attempt in 1...2 {
                    let (_, body) = try await PartRecorder(signal, label: "subscription \(attempt)").waitForSuccess()
                    try requireEqual(String(decoding: body, as: UTF8.self), "/cold", "body of subscription \(attempt)")
                }
                try requireEqual(server.requests.map(\.path), ["/other", "/cold", "/cold"], "paths the server saw")
            }
        },

        Check("concurrent requests", "32 requests at once, with bodies of different sizes and framings, each get their own response.") { make in
            let transport = try await make()
            try await withLoopbackServer(handler: { request in
                let index = Int(request.pathComponents.last ?? "") ?? 0
                let body = conformancePayload(1000 + index * 4000, seed: UInt64(index))
                return index.isMultiple(of: 2) ? .status(200, body: body) : .chunked([body.prefix(500), body.dropFirst(500)].map { Data($0) })
            }) { server in
                let recorders = (0..<32).map { index in
                    PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/concurrent/\(index)")))), label: "request \(index)")
                }
                for (index, recorder) in recorders.enumerated() {
                    let (head, body) = try await recorder.waitForSuccess()
                    try requireEqual(head.statusCode, 200, "status of request \(index)")
                    try require(body == conformancePayload(1000 + index * 4000, seed: UInt64(index)), "request \(index) got another body (\(body.count) bytes)")
                }
                try requireEqual(server.requests.count, 32, "requests the server saw")
            }
        },
    ]
}
