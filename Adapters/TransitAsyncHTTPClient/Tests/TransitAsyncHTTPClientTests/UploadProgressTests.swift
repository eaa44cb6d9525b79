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

/// Upload progress over `AsyncHTTPClientTransport`, as over `URLSessionTransport`: the body parts
/// AsyncHTTPClient writes are counted, from 0 to the body's length, and a retry counts again.
@Suite("Upload progress over AsyncHTTPClientTransport")
struct UploadProgressTests {
    /// A file of `mebibytes` MiB in a new folder (the caller removes the folder).
    private func makeFile(mebibytes: Int) throws -> (folder: URL, file: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-ahc-upload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("upload.bin")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        for _ in 0..<mebibytes { try handle.write(contentsOf: block) }
        return (folder, file)
    }

    private func progress(_ events: [UploadEvent]) -> [UploadProgress] {
        events.compactMap { event in
            if case .progress(let progress) = event { return progress }
            return nil
        }
    }

    /// `reports` are one send of `total` bytes: from 0 to `total`, only forward, all of `attempt`.
    private func expectOneSend(_ reports: [UploadProgress], of total: Int64, attempt: Int) {
        #expect(reports.first?.bytesSent == 0, "attempt \(attempt) starts at 0")
        #expect(reports.last?.bytesSent == total, "attempt \(attempt) ends at the whole body: \(String(describing: reports.last))")
        #expect(reports.allSatisfy { $0.attempt == attempt && $0.expectedBytes == total })
        let sent = reports.map(\.bytesSent)
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0 < $1 }, "attempt \(attempt): progress only goes forward")
    }

    @Test func aHundredMebibyteFileReportsFromZeroToTheWholeInOrder() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let (folder, file) = try makeFile(mebibytes: 100)
        defer { try? FileManager.default.removeItem(at: folder) }
        let total = Int64(100 << 20)
        let server = LoopbackServer(handler: { .text("\($0.body.count)") })
        try server.start()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        let events = try await Transit.HTTPClient(transport: transport).upload(request, bodyFile: file).collect().firstValue()
        guard case .completed(let response)? = events.last else {
            Issue.record("no completed event")
            return
        }
        #expect(response.text == "\(total)")
        let reports = progress(events)
        expectOneSend(reports, of: total, attempt: 1)
        // Throttled: at most one report per 1 % step, plus one per 50 ms of the transfer.
        #expect(reports.count <= 101 + 200, "\(reports.count) reports")
    }

    @Test func aRetryCountsFromZeroAgainAndSaysSo() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let (folder, file) = try makeFile(mebibytes: 8)
        defer { try? FileManager.default.removeItem(at: folder) }
        let total = Int64(8 << 20)
        let attempts = Mutex(0)
        let server = LoopbackServer(handler: { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return attempt == 1 ? .status(503, body: Data("busy".utf8)) : .text("\(request.body.count)")
        })
        try server.start()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        let events = try await Transit.HTTPClient(transport: transport).upload(request, bodyFile: file).retry(1).collect().firstValue()
        guard case .completed(let response)? = events.last else {
            Issue.record("no completed event")
            return
        }
        #expect(response.statusCode == 200)
        let reports = progress(events)
        guard let restart = reports.firstIndex(where: { $0.attempt == 2 }) else {
            Issue.record("the second send was not reported: \(reports)")
            return
        }
        expectOneSend(Array(reports[..<restart]), of: total, attempt: 1)
        expectOneSend(Array(reports[restart...]), of: total, attempt: 2)
        #expect(reports[restart].restarted)
    }

    @Test func bytesHeldInMemoryAreCountedToo() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let server = LoopbackServer(handler: { .text("\($0.body.count)") })
        try server.start()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: 0x61, count: 300_000)
        let events = try await Transit.HTTPClient(transport: transport).upload(request).collect().firstValue()
        guard case .completed(let response)? = events.last else {
            Issue.record("no completed event")
            return
        }
        #expect(response.text == "300000")
        expectOneSend(progress(events), of: 300_000, attempt: 1)
    }
}
