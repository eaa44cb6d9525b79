import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization
import Testing
import Transit
import TransitAsyncHTTPClient
import TransitTesting

/// A download over `AsyncHTTPClientTransport` that loses its connection mid-body continues with a
/// range, as over `URLSessionTransport`: the writer, not the transport, keeps and appends.
@Suite("Resumable downloads over AsyncHTTPClientTransport")
struct ResumableDownloadTests {
    static let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
    static let cut = 100_000

    @Test func aDroppedConnectionThenRetryAsksForTheRestAndAppendsIt() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-ahc-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let attempts = Mutex(0)
        let server = LoopbackServer(handler: { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            let response = LoopbackResponse.ranged(Self.body, for: request, etag: "\"v1\"")
            return attempt == 1 ? response.closingMidBody(afterBytes: Self.cut) : response
        })
        try server.start()
        defer { server.stop() }
        let events = try await Transit.HTTPClient(transport: transport)
            .download(URLRequest(url: server.url("/file")), to: destination)
            .retry(1)
            .collect()
            .firstValue()
        guard case .completed(let file)? = events.last else {
            Issue.record("no completed event")
            return
        }
        #expect(file.head.statusCode == 206)
        #expect(try Data(contentsOf: destination) == Self.body)
        #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
        #expect(server.requests.last?.value(forHTTPHeaderField: "If-Range") == "\"v1\"")
        #expect(server.sentBodyByteCount == Self.body.count)
        let received = events.compactMap { event -> Int64? in
            if case .progress(let progress) = event { return progress.bytesReceived }
            return nil
        }
        #expect(received == received.sorted(), "progress never goes back")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["file"])
    }

    @Test(arguments: ["close-delimited", "chunked"])
    func aContinuationLongerThanItsRangeFailsAndKeepsNothing(_ framing: String) async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-ahc-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let total = Self.body.count
        // The rest, then 30 bytes the representation does not have, with no Content-Length.
        let rest = Data(Self.body.suffix(from: Self.cut)) + Data(repeating: 0x2A, count: 30)
        let attempts = Mutex(0)
        let server = LoopbackServer(handler: { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            if attempt == 1 {
                return LoopbackResponse.ranged(Self.body, for: request, etag: "\"v1\"").closingMidBody(afterBytes: Self.cut)
            }
            let head = "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\n"
                + "Content-Range: bytes \(Self.cut)-\(total - 1)/\(total)\r\n"
            if framing == "chunked" {
                let chunk = Data(String(rest.count, radix: 16).utf8) + Data("\r\n".utf8) + rest + Data("\r\n0\r\n\r\n".utf8)
                return .raw(Data((head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").utf8) + chunk)
            }
            return .raw(Data((head + "Connection: close\r\n\r\n").utf8) + rest)
        })
        try server.start()
        defer { server.stop() }
        do {
            let events = try await Transit.HTTPClient(transport: transport)
                .download(URLRequest(url: server.url("/file")), to: destination)
                .retry(1)
                .collect()
                .firstValue()
            Issue.record("\(framing): the download completed: \(String(describing: events.last))")
        } catch {
            let code = (error as? TransportError)?.urlError?.code ?? (error as? URLError)?.code
            #expect(code == .badServerResponse, "\(framing): \(error)")
            #expect(DownloadResumeData(failure: error) == nil)
        }
        #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
        #expect(DownloadResumeData.kept(for: destination) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "\(framing): nothing is kept")
    }
}
