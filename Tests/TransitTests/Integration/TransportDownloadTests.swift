import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Downloads that `URLSessionTransport(downloadTasks: true)` writes itself (a download task, so the network waits for
/// the disk): the transport's contract for ``ResponseBodyFile`` and the client's download on it,
/// over loopback sockets.
@Suite("URLSessionTransport(downloadTasks: true) writes downloads itself")
struct TransportDownloadTests {
    private func makeClient() -> HTTPClient {
        let configuration = URLSessionConfiguration.loopbackTests()
        return HTTPClient(transport: URLSessionTransport(configuration: configuration, downloadTasks: true))
    }

    private func contents(of folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    private func await<Output: Sendable>(_ probe: AwaitedProbe<Output>) async throws {
        try #require(await probe.ended.wait(timeout: .seconds(60)), "no terminal event within 60 s")
        #expect(probe.violations == 0)
    }

    @Test func theTransportWritesTheBodyDeliversNoBodyPartsAndReportsProgress() async throws {
        let transport = URLSessionTransport(configuration: .ephemeral, downloadTasks: true)
        #expect(transport.writesResponseBodiesToFiles)
        let body = patternedData(count: (3 << 20) + 777) { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body")
        try Data("an older file is replaced".utf8).write(to: file)
        let reports = Locked<[(Int64, Int64?)]>([])
        let destination = ResponseBodyFile(url: file) { written, expected in reports.withLock { $0.append((written, expected)) } }
        try await withLoopbackServer(handler: { _ in .status(200, body: body) }) { server in
            let probe = AwaitedProbe(transport.exchange(TransportRequest(URLRequest(url: server.url("/f")), responseBodyFile: destination)))
            try await self.await(probe)
            #expect(probe.isFinished)
            #expect(probe.values.count == 1)
            guard case .head(let head)? = probe.values.first else {
                Issue.record("the only part is not the head")
                return
            }
            #expect(head.statusCode == 200)
            #expect(try Data(contentsOf: file) == body)
            let written = reports.withLock { $0 }
            #expect(written.count > 1, "progress is reported as the body is written")
            #expect(written.map(\.0) == written.map(\.0).sorted())
            #expect(written.last?.0 == Int64(body.count))
            #expect(written.allSatisfy { $0.1 == Int64(body.count) })
        }
    }

    @Test func anErrorStatusIsDeliveredWithItsBodyInTheFile() async throws {
        let transport = URLSessionTransport(configuration: .ephemeral, downloadTasks: true)
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body")
        try await withLoopbackServer(handler: { _ in .text("gone for good", status: 410) }) { server in
            let probe = AwaitedProbe(transport.exchange(TransportRequest(URLRequest(url: server.url("/f")), responseBodyFile: ResponseBodyFile(url: file) { _, _ in })))
            try await self.await(probe)
            guard case .head(let head)? = probe.values.first else {
                Issue.record("no head")
                return
            }
            #expect(head.statusCode == 410)
            #expect(probe.values.count == 1)
            #expect(try String(contentsOf: file, encoding: .utf8) == "gone for good")
        }
    }

    @Test func aDownloadOfAnUndeclaredLengthOverTheLimitIsCutOff() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let chunks = Array(repeating: Data(repeating: 0x41, count: 4096), count: 200)
        try await withLoopbackServer(handler: { _ in .chunked(chunks, interval: .milliseconds(20)) }) { server in
            let probe = AwaitedProbe(makeClient().download(
                URLRequest(url: server.url("/big")), to: folder.appendingPathComponent("big"), options: RequestOptions(maxResponseBytes: 10_000)
            ))
            try await self.await(probe)
            #expect(probe.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 10_000))
            #expect(await server.waitUntil { server.clientClosedConnectionCount >= 1 }, "the transfer was cancelled")
            #expect(try contents(of: folder).isEmpty)
        }
    }

    @Test func aDeclaredLengthOverTheLimitFailsTheDownload() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withLoopbackServer(handler: { _ in .status(200, body: Data(count: 500_000)) }) { server in
            let probe = AwaitedProbe(makeClient().download(
                URLRequest(url: server.url("/big")), to: folder.appendingPathComponent("big"), options: RequestOptions(maxResponseBytes: 1000)
            ))
            try await self.await(probe)
            #expect(probe.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 1000, declaredLength: 500_000))
            #expect(try contents(of: folder).isEmpty)
        }
    }

    @Test func aDownloadFollowsARedirectToAnotherOriginWithoutTheToken() async throws {
        let body = patternedData(count: 200_000) { UInt8(truncatingIfNeeded: $0 &* 13) }
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: { _ in .status(200, body: body) }) { other in
            try await withLoopbackServer(handler: { _ in
                .status(302, headers: ["Location": other.url("/file").absoluteString], body: Data("moved".utf8))
            }) { origin in
                var request = URLRequest(url: origin.url("/start"))
                request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
                let probe = AwaitedProbe(makeClient().download(request, to: destination))
                try await self.await(probe)
                guard case .completed(let file)? = probe.values.last else {
                    Issue.record("no completed event: \(String(describing: probe.failure))")
                    return
                }
                #expect(file.head.statusCode == 200)
                #expect(file.byteCount == Int64(body.count))
                #expect(try Data(contentsOf: destination) == body)
                #expect(try contents(of: folder) == ["file"])
                #expect(origin.requests.first?.value(forHTTPHeaderField: "Authorization") == "Bearer secret-token")
                #expect(other.requests.first?.value(forHTTPHeaderField: "Authorization") == nil)
            }
        }
    }

    @Test func cancellingADownloadMidBodyLeavesNoFile() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // 1,000 chunks half a second apart: the transfer cannot end before the checks, however
        // late a starved run (the thread sanitizer, a loaded machine) hears of the first bytes.
        // With 50 ms it took 50 s, and a CI run under TSan first saw progress after it had ended.
        let chunks = Array(repeating: Data(repeating: 0x42, count: 1024), count: 1000)
        try await withLoopbackServer(handler: { _ in .chunked(chunks, interval: .milliseconds(500)) }) { server in
            let started = IntegrationGate()
            let token = makeClient().download(URLRequest(url: server.url("/slow")), to: folder.appendingPathComponent("slow")).observe(
                Observer { event in
                    if case .value(.progress(let progress)) = event, progress.bytesReceived > 0 { started.open() }
                }
            )
            try #require(await started.wait(timeout: .seconds(60)), "no progress within 60 s")
            // URLSession writes the body to a file of its own; nothing is under the destination.
            #expect(try contents(of: folder).isEmpty)
            token.cancel()
            #expect(await server.waitUntil { server.clientClosedConnectionCount >= 1 }, "the transfer was cancelled")
            #expect(try contents(of: folder).isEmpty)
        }
    }

    @Test func monitorsCountTheBytesTheTransportWrote() async throws {
        let body = Data(repeating: 0x5A, count: 1_234_567)
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = AttemptLog()
        let client = HTTPClient(transport: URLSessionTransport(configuration: .ephemeral, downloadTasks: true)) { $0.monitors = [log] }
        try await withLoopbackServer(handler: { _ in .status(200, body: body) }) { server in
            let probe = AwaitedProbe(client.download(URLRequest(url: server.url("/f")), to: folder.appendingPathComponent("f")))
            try await self.await(probe)
            #expect(probe.isFinished)
            let attempt = try #require(log.attempts.first)
            #expect(log.attempts.count == 1)
            #expect(attempt.head?.statusCode == 200)
            #expect(attempt.receivedBodyBytes == Int64(body.count))
        }
    }

    @Test func withoutDownloadTasksTheBodyArrivesAsPartsAndNoFileIsWritten() async throws {
        let transport = URLSessionTransport(configuration: .ephemeral)
        #expect(!transport.writesResponseBodiesToFiles)
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body")
        try await withLoopbackServer(handler: { _ in .text("as parts") }) { server in
            let probe = AwaitedProbe(transport.exchange(TransportRequest(URLRequest(url: server.url("/f")), responseBodyFile: ResponseBodyFile(url: file) { _, _ in })))
            try await self.await(probe)
            let body = probe.values.reduce(into: Data()) { body, part in
                if case .body(let chunk) = part { body.append(chunk) }
            }
            #expect(String(decoding: body, as: UTF8.self) == "as parts")
            #expect(try contents(of: folder).isEmpty)
        }
    }
}
