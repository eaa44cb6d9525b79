import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import Signals
import Testing
import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// `AsyncHTTPClientTransport` decodes gzip and deflate bodies as `URLSessionTransport` does, with
/// memory bounded by the client's size limit and a ratio limit against decompression bombs.
@Suite("AsyncHTTPClientTransport decompression")
struct DecompressionTests {
    let body = Zlib.sampleText(bytes: 300_000)

    private func encoded(_ data: Data, _ encoding: String, status: Int = 200) -> LoopbackResponse {
        LoopbackResponse.status(status, headers: ["Content-Encoding": encoding, "Content-Type": "application/json"], body: data)
    }

    @Test(arguments: [("gzip", Zlib.Format.gzip), ("deflate", .zlib), ("deflate", .raw), ("x-gzip", .gzip), ("GZIP", .gzip)])
    func decodesTheBodyAndSendsAcceptEncoding(encoding: String, format: Zlib.Format) async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            server.enqueue(encoded(Zlib.compress(body, format), encoding))
            let response = try await transport.send(URLRequest(url: server.url("/posts"))).firstValue()
            #expect(response.data == body)
            #expect(server.requests.first?.value(forHTTPHeaderField: "Accept-Encoding") == "gzip, deflate")
            // The head describes the body as delivered: decoded, of a length it does not announce.
            #expect(response.value(forHTTPHeaderField: "Content-Encoding") == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Length") == nil)
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        }
    }

    @Test func decodesAChunkedBodyPieceByPieceAndConsecutiveGzipMembers() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            let first = Zlib.compress(body, .gzip)
            let second = Zlib.compress(Data("tail".utf8), .gzip)
            let whole = first + second
            // Chunks cut anywhere, one byte among them.
            let cuts = [0, 1, 2, 10, 11, 500, first.count - 3, first.count + 1, whole.count]
            let chunks = zip(cuts, cuts.dropFirst()).map { whole.subdata(in: $0..<$1) }
            server.enqueue(.chunked(chunks, headers: ["Content-Encoding": "gzip"]))
            let parts = try await transport.exchange(TransportRequest(URLRequest(url: server.url("/chunked")))).collect().firstValue()
            let pieces = parts.compactMap { part -> Data? in
                if case .body(let data) = part { return data }
                return nil
            }
            #expect(pieces.reduce(Data(), +) == body + Data("tail".utf8))
            #expect(pieces.allSatisfy { $0.count <= ContentDecoder.pieceSize })
        }
    }

    @Test func theSizeLimitCountsDecodedBytes() async throws {
        // A body far larger decoded than encoded, with a ratio limit that lets it through.
        let transport = AsyncHTTPClientTransport(decompression: .enabled(maxRatio: 100_000))
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            let large = Data(count: 8 << 20)
            let compressed = Zlib.compress(large, .gzip)
            #expect(compressed.count < 1 << 20)
            server.enqueue(encoded(compressed, "gzip"))
            let client = Transit.HTTPClient(transport: transport) { $0.maxResponseBytes = 1 << 20 }
            await #expect(throws: ResponseTooLargeError.self) {
                _ = try await client.send(URLRequest(url: server.url("/large"))).firstValue()
            }
        }
    }

    @Test func aDecompressionBombFails() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            server.enqueue(encoded(Zlib.compress(Data(count: 16 << 20), .gzip), "gzip"))
            let error = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: server.url("/bomb")))))
            #expect(error.code == .cannotDecodeContentData)
            #expect(error.localizedDescription.contains("100 times"))
        }
    }

    /// Thousands of empty gzip members (a 4 MB body that decodes to 11 bytes) are refused once
    /// the encoded bytes outgrow the decoded ones, after a bounded prefix: neither the size limit
    /// nor the bomb ratio sees them, and each used to cost an output piece kept alive until the
    /// chunk was used up.
    @Test func thousandsOfEmptyGzipMembersAreRefusedEarly() throws {
        let first = Zlib.compress(Data("hello world".utf8), .gzip)
        let empty = Zlib.compress(Data(), .gzip)
        let body = first + Data([[UInt8]](repeating: [UInt8](empty), count: 4_000_000 / empty.count).joined())
        let decoder = ContentDecoder(coding: .gzip, maxRatio: 100, url: URL(string: "https://example.test/")!)
        var decoded = Data()
        var failure: URLError?
        var fed = 0
        let chunkSize = 64 << 10
        chunks: for start in stride(from: 0, to: body.count, by: chunkSize) {
            let chunk = body[start..<min(start + chunkSize, body.count)]
            decoder.feed(ByteBuffer(bytes: chunk))
            fed += chunk.count
            do {
                while let piece = try decoder.next() { decoded += piece }
            } catch let error as URLError {
                failure = error
                break chunks
            }
        }
        #expect(failure?.code == .cannotDecodeContentData)
        #expect(failure?.localizedDescription.contains("decode to only") == true, "\(String(describing: failure))")
        #expect(decoded == Data("hello world".utf8))
        #expect(fed <= Int(ContentDecoder.degenerateAllowance) + 2 * chunkSize)
        // Once failed, it stays failed.
        #expect(throws: URLError.self) { try decoder.finish() }
    }

    /// A member that decodes to nothing between real ones, and a long header field, are fine.
    @Test func emptyMembersAmongRealOnesDecode() throws {
        let text = Zlib.sampleText(bytes: 10_000)
        let empty = Zlib.compress(Data(), .gzip)
        let body = Zlib.compress(text, .gzip) + empty + empty + Zlib.compress(text, .gzip) + empty
        let decoder = ContentDecoder(coding: .gzip, maxRatio: 100, url: URL(string: "https://example.test/")!)
        decoder.feed(ByteBuffer(bytes: body))
        var decoded = Data()
        while let piece = try decoder.next() { decoded += piece }
        try decoder.finish()
        #expect(decoded == text + text)
    }

    @Test func corruptAndTruncatedStreamsFail() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            let gzip = Zlib.compress(body, .gzip)
            var corrupt = gzip
            for index in stride(from: 20, to: 400, by: 7) { corrupt[index] ^= 0x5A }
            server.enqueue(encoded(corrupt, "gzip"))
            let corrupted = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: server.url("/corrupt")))))
            #expect(corrupted.code == .cannotDecodeContentData)

            server.enqueue(encoded(Data("not gzip at all".utf8), "gzip"))
            let garbage = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: server.url("/garbage")))))
            #expect(garbage.code == .cannotDecodeContentData)

            server.enqueue(encoded(gzip.prefix(gzip.count / 2), "gzip"))
            let truncated = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: server.url("/truncated")))))
            #expect(truncated.code == .cannotDecodeContentData)
            #expect(truncated.localizedDescription.contains("truncated"))
        }
    }

    @Test func anEmptyEncodedBodyIsEmpty() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            server.enqueue(encoded(Data(), "gzip", status: 204))
            let response = try await transport.send(URLRequest(url: server.url("/none"))).firstValue()
            #expect(response.statusCode == 204)
            #expect(response.data.isEmpty)
        }
    }

    @Test func anEncodingItCannotDecodeFailsUnlessTheCallerAskedForIt() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            let brotli = Data([0x1B, 0x03, 0x00, 0xF8, 0x25, 0x00])
            server.enqueue(encoded(brotli, "br"))
            let error = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: server.url("/br")))))
            #expect(error.code == .cannotDecodeContentData)
            #expect(error.localizedDescription.contains("\"br\""))

            // The caller sent its own Accept-Encoding: it gets what it asked for, as it was sent.
            server.enqueue(encoded(brotli, "br"))
            var request = URLRequest(url: server.url("/br"))
            request.setValue("br", forHTTPHeaderField: "Accept-Encoding")
            let response = try await transport.send(request).firstValue()
            #expect(response.data == brotli)
            #expect(response.value(forHTTPHeaderField: "Content-Encoding") == "br")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Accept-Encoding") == "br")
        }
    }

    @Test func decompressionCanBeTurnedOff() async throws {
        let transport = AsyncHTTPClientTransport(decompression: .disabled)
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            let gzip = Zlib.compress(body, .gzip)
            server.enqueue(encoded(gzip, "gzip"))
            let response = try await transport.send(URLRequest(url: server.url("/raw"))).firstValue()
            #expect(response.data == gzip)
            #expect(server.requests.first?.value(forHTTPHeaderField: "Accept-Encoding") == nil)
        }
    }

    @Test func aDownloadHoldsTheDecodedBytes() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        try await withLoopbackServer { server in
            server.enqueue(encoded(Zlib.compress(body, .gzip), "gzip"))
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("transit-gzip-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: destination) }
            let client = Transit.HTTPClient(transport: transport)
            let events = try await client.download(URLRequest(url: server.url("/file")), to: destination).collect().firstValue()
            #expect(try Data(contentsOf: destination) == body)
            let progress = events.compactMap { event -> DownloadProgress? in
                if case .progress(let progress) = event { return progress }
                return nil
            }
            // Progress counts decoded bytes; no length is announced for them.
            #expect(progress.last?.bytesReceived == Int64(body.count))
            #expect(progress.allSatisfy { $0.expectedBytes == nil })
        }
    }

    /// What `URLSessionTransport` does with the same body, for comparison: Foundation decodes it
    /// too, but on Linux keeps the head as the server sent it; a download's progress counts decoded
    /// bytes and offers no total, since the `Content-Length` counts encoded ones.
    @Test func urlSessionTransportDeliversDecodedBytesToo() async throws {
        try await withLoopbackServer { server in
            let gzip = Zlib.compress(body, .gzip)
            server.enqueue(encoded(gzip, "gzip"))
            let response = try await URLSessionTransport().send(URLRequest(url: server.url("/posts"))).firstValue()
            #expect(response.data == body)

            server.enqueue(encoded(gzip, "gzip"))
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("transit-gzip-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: destination) }
            let events = try await Transit.HTTPClient(transport: URLSessionTransport()).download(URLRequest(url: server.url("/file")), to: destination).collect().firstValue()
            #expect(try Data(contentsOf: destination) == body)
            #if canImport(FoundationNetworking)
            #expect(response.value(forHTTPHeaderField: "Content-Encoding") == "gzip")
            #expect(response.value(forHTTPHeaderField: "Content-Length") == "\(gzip.count)")
            let progress = events.compactMap { event -> DownloadProgress? in
                if case .progress(let progress) = event { return progress }
                return nil
            }
            #expect(progress.last?.bytesReceived == Int64(body.count))
            #expect(progress.allSatisfy { $0.expectedBytes == nil }, "expected totals: \(progress.map(\.expectedBytes))")
            #endif
        }
    }
}
