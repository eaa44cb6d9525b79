import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// The seam over real sockets: `HTTPClient` on `URLSessionTransport` against loopback servers.
/// Wall-clock tests with generous bounds; every wait is on a real condition.
@Suite("Seam over loopback")
struct SeamIntegrationTests {
    private func makeClient(
        maxResponseBytes: Int = HTTPClient.defaultMaxResponseBytes,
        deadline: Deadline = .after(.seconds(60))
    ) -> HTTPClient {
        let configuration = URLSessionConfiguration.loopbackTests()
        return HTTPClient(transport: URLSessionTransport(configuration: configuration)) {
            $0.maxResponseBytes = maxResponseBytes
            $0.deadline = deadline
        }
    }

    /// Subscribes to `signal` and waits (real time, bounded) for its terminal event.
    private func await<Output: Sendable>(_ signal: Signal<Output, any Error>) async throws -> AwaitedProbe<Output> {
        let probe = AwaitedProbe(signal)
        try #require(await probe.ended.wait(timeout: .seconds(60)), "no terminal event within 60 s")
        #expect(probe.violations == 0)
        return probe
    }

    @Test func aRedirectToAnotherPortArrivesWithoutCredentials() async throws {
        try await withLoopbackServer(handler: { _ in .text("other origin") }) { other in
            try await withLoopbackServer(handler: { request in
                request.path == "/start"
                    ? .status(302, headers: ["Location": other.url("/landing").absoluteString])
                    : .status(404)
            }) { origin in
                var request = URLRequest(url: origin.url("/start"))
                request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
                request.setValue("session=abc", forHTTPHeaderField: "Cookie")
                request.setValue("kept", forHTTPHeaderField: "X-Trace")
                let probe = try await self.await(makeClient().send(request))
                #expect(probe.values.first?.text == "other origin")
                let first = try #require(origin.requests.first)
                #expect(first.value(forHTTPHeaderField: "Authorization") == "Bearer secret-token")
                let landed = try #require(other.requests.first)
                #expect(landed.path == "/landing")
                #expect(landed.value(forHTTPHeaderField: "Authorization") == nil)
                #expect(landed.value(forHTTPHeaderField: "Cookie") == nil)
                #expect(landed.value(forHTTPHeaderField: "X-Trace") == "kept")
            }
        }
    }

    @Test func aTricklingServerIsCutOffAtTheDeadline() async throws {
        // One byte every 100 ms for 100 s: the idle timeout (reset by every byte) never fires.
        let trickle = Array(repeating: Data([0x2E]), count: 1000)
        try await withLoopbackServer(handler: { _ in .chunked(trickle, interval: .milliseconds(100)) }) { server in
            let started = ContinuousClock.now
            let probe = try await self.await(makeClient(deadline: .after(.seconds(1))).send(URLRequest(url: server.url("/slow"))))
            #expect(urlErrorCode(probe.failure) == .timedOut)
            // Only the deadline can end it before the trickle does (100 s): the idle timeout never
            // fires. A tighter bound measures the machine, not the deadline (a loaded TSan run
            // took 33 s to get this far).
            #expect(ContinuousClock.now - started < .seconds(100))
            // The transfer was cancelled: the server sees the connection closed.
            #expect(await server.waitUntil { server.clientClosedConnectionCount >= 1 })
        }
    }

    @Test func aBodyOverTheLimitCancelsTheTransfer() async throws {
        let chunks = Array(repeating: Data(repeating: 0x41, count: 4096), count: 200)
        try await withLoopbackServer(handler: { _ in .chunked(chunks, interval: .milliseconds(20)) }) { server in
            let probe = try await self.await(makeClient(maxResponseBytes: 10_000).send(URLRequest(url: server.url("/big"))))
            #expect(probe.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 10_000))
            #expect(await server.waitUntil { server.clientClosedConnectionCount >= 1 })
        }
    }

    @Test func aDeclaredLengthOverTheLimitFailsAtTheHead() async throws {
        try await withLoopbackServer(handler: { _ in .status(200, body: Data(count: 50_000)) }) { server in
            let probe = try await self.await(makeClient(maxResponseBytes: 1000).send(URLRequest(url: server.url("/big"))))
            #expect(probe.failure as? ResponseTooLargeError == ResponseTooLargeError(limit: 1000, declaredLength: 50_000))
        }
    }

    @Test func aStreamDeliversChunksBeforeTheBodyEnds() async throws {
        let chunks = (0..<5).map { Data("chunk \($0);".utf8) }
        try await withLoopbackServer(handler: { _ in .chunked(chunks, interval: .milliseconds(50)) }) { server in
            let probe = try await self.await(makeClient().stream(URLRequest(url: server.url("/s"))))
            guard case .head(let head)? = probe.values.first else {
                Issue.record("the first part is not the head")
                return
            }
            #expect(head.statusCode == 200)
            let body = probe.values.dropFirst().reduce(into: Data()) { body, part in
                if case .body(let data) = part { body.append(data) }
            }
            #expect(body == chunks.reduce(Data(), +))
            #expect(probe.values.count >= 3) // the body arrived in pieces, not at the end
        }
    }

    @Test func aDownloadAppearsOnlyComplete() async throws {
        let body = patternedData(count: 300_000) { UInt8(truncatingIfNeeded: $0 &* 31) }
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.bin")
        try await withLoopbackServer(handler: { _ in .status(200, body: body) }) { server in
            let probe = try await self.await(makeClient().download(URLRequest(url: server.url("/f")), to: destination))
            #expect(probe.isFinished)
            guard case .completed(let file)? = probe.values.last else {
                Issue.record("no completed event")
                return
            }
            #expect(file.url == destination)
            #expect(file.byteCount == Int64(body.count))
            #expect(try Data(contentsOf: destination) == body)
            let progress = probe.values.compactMap { event -> DownloadProgress? in
                if case .progress(let progress) = event { return progress }
                return nil
            }
            #expect(progress.first?.bytesReceived == 0)
            #expect(progress.last?.bytesReceived == Int64(body.count))
            #expect(progress.allSatisfy { $0.expectedBytes == Int64(body.count) })
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["file.bin"])
        }
    }

    /// Chunks are gathered into 1 MiB writes: a body of several writes and a partial last one
    /// arrives byte for byte, and progress still counts every chunk as it arrives.
    @Test func aLargeDownloadIsWrittenWholeAcrossGatheredWrites() async throws {
        let body = patternedData(count: (5 << 20) + 12_345) { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 12) }
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("large.bin")
        try await withLoopbackServer(handler: { _ in .status(200, body: body) }) { server in
            let probe = try await self.await(makeClient().download(URLRequest(url: server.url("/large")), to: destination))
            #expect(probe.isFinished)
            #expect(try Data(contentsOf: destination) == body)
            let progress = probe.values.compactMap { event -> Int64? in
                if case .progress(let progress) = event { return progress.bytesReceived }
                return nil
            }
            #expect(progress.count > 3, "progress is reported per chunk, not per write")
            #expect(progress == progress.sorted())
            #expect(progress.last == Int64(body.count))
        }
    }

    @Test func aDownloadCutOffMidBodyLeavesNoFile() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withLoopbackServer(handler: { _ in .status(200, body: Data(count: 100_000)).closingMidBody(afterBytes: 30_000) }) { server in
            let probe = try await self.await(makeClient().download(URLRequest(url: server.url("/f")), to: folder.appendingPathComponent("f")))
            #expect(urlErrorCode(probe.failure) == .networkConnectionLost)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test func aDownloadAnswered404FailsWithTheHTTPErrorAndWritesNothing() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withLoopbackServer(handler: { _ in .text("no such file", status: 404) }) { server in
            let probe = try await self.await(makeClient().download(URLRequest(url: server.url("/f")), to: folder.appendingPathComponent("f")))
            let error = try #require(probe.failure as? HTTPClientError)
            #expect(error.statusCode == 404)
            #expect(error.response.map { String(decoding: $0.data, as: UTF8.self) } == "no such file")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test func anUploadStreamsTheFile() async throws {
        let payload = patternedData(count: 200_000) { UInt8(truncatingIfNeeded: $0) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("transit-up-\(UUID().uuidString)")
        try payload.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withLoopbackServer(handler: { _ in .status(201) }) { server in
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let probe = try await self.await(makeClient().send(request, bodyFile: file))
            #expect(probe.values.first?.statusCode == 201)
            let received = try #require(server.requests.first)
            #expect(received.method == "PUT")
            #expect(received.body == payload)
        }
    }
}

/// Records one subscription's events and opens a gate on its terminal event.
final class AwaitedProbe<Output: Sendable>: Sendable {
    private let state = Locked<(events: [Event<Output, any Error>], violations: Int)>(([], 0))
    private let token = Locked<CancellationToken?>(nil)
    let ended = IntegrationGate()

    init(_ signal: Signal<Output, any Error>) {
        let token = signal.observe(Observer { [state, ended] event in
            state.withLock { state in
                if state.events.last?.isTerminal == true { state.violations += 1 }
                state.events.append(event)
            }
            if event.isTerminal { ended.open() }
        })
        self.token.withLock { $0 = token }
    }

    var events: [Event<Output, any Error>] { state.withLock { $0.events } }
    var values: [Output] { events.compactMap(\.value) }
    var isFinished: Bool { if case .finished? = events.last?.completion { return true } else { return false } }
    var failure: (any Error)? { if case .failure(let error)? = events.last?.completion { return error } else { return nil } }
    var violations: Int { state.withLock { $0.violations } }
}
