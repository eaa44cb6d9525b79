import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Upload progress over `URLSessionTransport` and loopback sockets: every kind of body reports
/// from 0 to its length, in order, and a send that starts again (a retry, a redirect) counts from
/// 0 again and says so.
@Suite("Upload progress over URLSessionTransport")
struct UploadProgressTests {
    private struct API: RESTAPI {
        let baseURL: String
        let client: HTTPClient
    }

    private struct Post: Encodable, Sendable {
        let title: String
        let body: String
    }

    private func makeClient() -> HTTPClient {
        HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests()))
    }

    private func await<Output: Sendable>(_ probe: AwaitedProbe<Output>) async throws {
        try #require(await probe.ended.wait(timeout: .seconds(120)), "no terminal event within 120 s")
        #expect(probe.violations == 0)
    }

    private func progress(_ probe: AwaitedProbe<UploadEvent>) -> [UploadProgress] {
        probe.values.compactMap { event in
            if case .progress(let progress) = event { return progress }
            return nil
        }
    }

    /// The server's answer: the number of body bytes it received.
    private let counting: LoopbackServer.Handler = { request in .text("\(request.body.count)") }

    @Test func aHundredMebibyteFileReportsFromZeroToTheWholeInOrder() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try UploadTestFile.make(in: folder, mebibytes: 100)
        let total = Int64(100 << 20)
        try await withLoopbackServer(handler: counting) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let probe = AwaitedProbe(makeClient().upload(request, bodyFile: file))
            try await self.await(probe)
            guard case .completed(let response)? = probe.values.last else {
                Issue.record("no completed event: \(String(describing: probe.failure))")
                return
            }
            #expect(response.text == "\(total)")
            let reports = progress(probe)
            try UploadTestFile.expectOneSend(reports, of: total, attempt: 1)
        }
    }

    @Test func aRetryCountsFromZeroAgainAndSaysSo() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try UploadTestFile.make(in: folder, mebibytes: 8)
        let total = Int64(8 << 20)
        let attempts = Locked(0)
        let handler: LoopbackServer.Handler = { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return attempt == 1 ? .status(503, body: Data("busy".utf8)) : .text("\(request.body.count)")
        }
        try await withLoopbackServer(handler: handler) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let probe = AwaitedProbe(makeClient().upload(request, bodyFile: file).retry(1))
            try await self.await(probe)
            guard case .completed(let response)? = probe.values.last else {
                Issue.record("no completed event: \(String(describing: probe.failure))")
                return
            }
            #expect(response.statusCode == 200)
            #expect(server.requests.count == 2)
            let reports = progress(probe)
            let restart = try #require(reports.firstIndex { $0.attempt == 2 }, "the second send is reported")
            try UploadTestFile.expectOneSend(Array(reports[..<restart]), of: total, attempt: 1)
            try UploadTestFile.expectOneSend(Array(reports[restart...]), of: total, attempt: 2)
            #expect(reports[restart].restarted)
            #expect(!reports[0].restarted)
        }
    }

    @Test func aRedirectThatRepeatsTheBodyCountsFromZeroAgain() async throws {
        let body = Data(repeating: 0x61, count: 300_000)
        try await withLoopbackServer(handler: counting) { server in
            server.enqueue(.status(307, headers: ["Location": "/landing"]), matching: { $0.path == "/start" })
            var request = URLRequest(url: server.url("/start"))
            request.httpMethod = "POST"
            request.httpBody = body
            let probe = AwaitedProbe(makeClient().upload(request))
            try await self.await(probe)
            guard case .completed(let response)? = probe.values.last else {
                Issue.record("no completed event: \(String(describing: probe.failure))")
                return
            }
            #expect(response.text == "\(body.count)")
            let reports = progress(probe)
            let restart = try #require(reports.firstIndex { $0.attempt == 2 })
            try UploadTestFile.expectOneSend(Array(reports[..<restart]), of: Int64(body.count), attempt: 1)
            try UploadTestFile.expectOneSend(Array(reports[restart...]), of: Int64(body.count), attempt: 2)
        }
    }

    static let bodyKinds = ["data", "json", "form", "multipart", "file"]

    @Test(arguments: bodyKinds)
    func everyKindOfBodyReportsItsLength(_ kind: String) async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try UploadTestFile.make(in: folder, mebibytes: 1)
        var form = MultipartFormData()
        form.append("a caption", name: "caption")
        form.append(fileAt: file, name: "photo", filename: "photo.bin")
        let bodies: [String: RequestBody] = [
            "data": .data(Data(repeating: 0x62, count: 200_000)),
            "json": .json(Post(title: "Hello", body: String(repeating: "x", count: 100_000))),
            "form": .form(["title": "Hello", "body": String(repeating: "y", count: 100_000)]),
            "multipart": .multipart(form),
            "file": .file(file),
        ]
        try await withLoopbackServer(handler: counting) { server in
            let api = API(baseURL: server.url("/").absoluteString, client: makeClient())
            let probe = AwaitedProbe(api.upload(endpoint: "upload", body: try #require(bodies[kind])))
            try await self.await(probe)
            guard case .completed(let response)? = probe.values.last else {
                Issue.record("\(kind): no completed event: \(String(describing: probe.failure))")
                return
            }
            let received = try #require(Int64(response.text ?? ""), "\(kind)")
            #expect(received > 0)
            try UploadTestFile.expectOneSend(progress(probe), of: received, attempt: 1)
        }
    }

    @Test func aFailingStatusFailsWithItsHTTPError() async throws {
        try await withLoopbackServer(handler: { _ in .status(413, body: Data("too big".utf8)) }) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            request.httpBody = Data(count: 1000)
            let probe = AwaitedProbe(makeClient().upload(request))
            try await self.await(probe)
            let error = try #require(probe.failure as? HTTPClientError)
            #expect(error.statusCode == 413)
        }
    }
}

/// Files to upload and what their progress must look like, for both transports' tests.
enum UploadTestFile {
    /// A file of `mebibytes` MiB in `folder`, written a mebibyte at a time.
    static func make(in folder: URL, mebibytes: Int) throws -> URL {
        let file = folder.appendingPathComponent("upload-\(mebibytes).bin")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        for _ in 0..<mebibytes { try handle.write(contentsOf: block) }
        return file
    }

    /// `reports` are one send of a body of `total` bytes: from 0 to `total`, never back, with the
    /// length known throughout, at most one report per 1 % step or 50 ms, all of `attempt`.
    static func expectOneSend(_ reports: [UploadProgress], of total: Int64, attempt: Int) throws {
        let first = try #require(reports.first, "attempt \(attempt): no report")
        #expect(first.bytesSent == 0, "attempt \(attempt) starts at 0")
        #expect(reports.last?.bytesSent == total, "attempt \(attempt) ends at the whole body: \(String(describing: reports.last))")
        #expect(reports.allSatisfy { $0.attempt == attempt && $0.expectedBytes == total })
        let sent = reports.map(\.bytesSent)
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0 < $1 }, "attempt \(attempt): progress only goes forward")
    }
}
