import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Downloads that continue where an interrupted transfer stopped (`Range`/`If-Range`), over
/// `URLSessionTransport` and loopback sockets: what the server is asked for and sends, what
/// progress says, and that bytes of two representations are never mixed.
@Suite("Resumable downloads over URLSessionTransport")
struct ResumableDownloadTests {
    static let body = patternedData(count: 300_000) { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    static let cut = 100_000
    static let etag = "\"v1\""

    private func makeClient(downloadTasks: Bool = false) -> HTTPClient {
        HTTPClient(transport: URLSessionTransport(configuration: .loopbackTests(), downloadTasks: downloadTasks))
    }

    private func contents(of folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    private func await<Output: Sendable>(_ probe: AwaitedProbe<Output>) async throws {
        try #require(await probe.ended.wait(timeout: .seconds(60)), "no terminal event within 60 s")
        #expect(probe.violations == 0)
    }

    private func progress(_ probe: AwaitedProbe<DownloadEvent>) -> [DownloadProgress] {
        probe.values.compactMap { event in
            if case .progress(let progress) = event { return progress }
            return nil
        }
    }

    /// A handler whose first answer is the ranged representation cut after ``cut`` body bytes,
    /// and whose later answers are `later(request, attempt)` (attempt 2, 3, …).
    private func interruptedOnce(
        later: @escaping @Sendable (LoopbackRequest, Int) -> LoopbackResponse = { request, _ in
            .ranged(ResumableDownloadTests.body, for: request, etag: ResumableDownloadTests.etag)
        }
    ) -> LoopbackServer.Handler {
        let count = Locked(0)
        return { request in
            let attempt = count.withLock { count in
                count += 1
                return count
            }
            if attempt == 1 {
                return LoopbackResponse.ranged(Self.body, for: request, etag: Self.etag).closingMidBody(afterBytes: Self.cut)
            }
            return later(request, attempt)
        }
    }

    @Test func aDroppedConnectionThenRetryAsksForTheRestAndAppendsIt() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            guard case .completed(let file)? = probe.values.last else {
                Issue.record("no completed event: \(String(describing: probe.failure))")
                return
            }
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(file.byteCount == Int64(Self.body.count))
            #expect(file.head.statusCode == 206)
            #expect(server.requests.count == 2)
            #expect(server.requests.first?.value(forHTTPHeaderField: "Range") == nil)
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
            #expect(server.requests.last?.value(forHTTPHeaderField: "If-Range") == Self.etag)
            // The first part was sent once: the second answer carried only the rest.
            #expect(server.sentBodyByteCount == Self.body.count)
            let reports = progress(probe)
            #expect(reports.map(\.bytesReceived) == reports.map(\.bytesReceived).sorted(), "progress never goes back")
            let resumedAt = try #require(reports.firstIndex { $0.bytesReceived == Int64(Self.cut) && $0.expectedBytes == Int64(Self.body.count) })
            #expect(reports[resumedAt...].allSatisfy { $0.expectedBytes == Int64(Self.body.count) })
            #expect(reports.last?.bytesReceived == Int64(Self.body.count))
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test func anInterruptedDownloadFailsWithResumeDataAndNothingUnderTheDestinationName() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            var request = URLRequest(url: server.url("/file"))
            request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
            let probe = AwaitedProbe(makeClient().download(request, to: destination))
            try await self.await(probe)
            let failure = try #require(probe.failure)
            let resume = try #require(DownloadResumeData(failure: failure), "the failure carries resume data: \(failure)")
            #expect(resume.url == server.url("/file"))
            #expect(resume.validator == Self.etag)
            #expect(resume.bytesOnDisk == Int64(Self.cut))
            #expect(resume.totalBytes == Int64(Self.body.count))
            #expect(DownloadResumeData.kept(for: destination) == resume)
            let files = try contents(of: folder)
            #expect(!files.contains("file"), "the partial body never has the destination's name")
            #expect(files.count == 2, "a hidden partial file and its sidecar: \(files)")
            #expect(files.allSatisfy { $0.hasPrefix(".") })
            #expect(try Data(contentsOf: resume.partialFile) == Self.body.prefix(Self.cut))
            // No request header is kept.
            let json = try JSONEncoder().encode(resume)
            #expect(!String(decoding: json, as: UTF8.self).contains("secret-token"))
        }
    }

    @Test func explicitResumeFromADecodedValueWithANewClient() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(first)
            let firstFailure = try #require(first.failure)
            let resume = try #require(DownloadResumeData(failure: firstFailure))
            let stored = try JSONEncoder().encode(resume)
            // As after a relaunch: a decoded value and a client that never saw the download.
            let decoded = try JSONDecoder().decode(DownloadResumeData.self, from: stored)
            #expect(decoded == resume)
            let probe = AwaitedProbe(makeClient().download(resuming: decoded, to: destination))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
            #expect(server.sentBodyByteCount == Self.body.count)
            #expect(progress(probe).first == DownloadProgress(bytesReceived: Int64(Self.cut), expectedBytes: Int64(Self.body.count)))
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test func aServerThatIgnoresTheRangeRestartsFromZero() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let handler = interruptedOnce { _, _ in
            .status(200, headers: ["Accept-Ranges": "bytes", "ETag": ResumableDownloadTests.etag], body: ResumableDownloadTests.body)
        }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
            #expect(server.sentBodyByteCount == Self.cut + Self.body.count)
            let reports = progress(probe)
            let restart = try #require(reports.lastIndex { $0.bytesReceived == 0 })
            #expect(restart > 0, "progress starts again from zero")
            #expect(reports.last?.bytesReceived == Int64(Self.body.count))
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test func aChangedRepresentationIsFetchedWholeAndNeverMixed() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let changed = Data(repeating: 0x77, count: 250_000)
        let handler = interruptedOnce { request, _ in .ranged(changed, for: request, etag: "\"v2\"") }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "If-Range") == Self.etag)
            #expect(try Data(contentsOf: destination) == changed)
            #expect(try contents(of: folder) == ["file"])
        }
    }

    /// Answers to a resume that cannot be appended: the download starts again without a range.
    static let unusableAnswers: [String] = [
        "412", "416", "206 starting elsewhere", "206 with another total", "206 without Content-Range",
        "206 multipart/byteranges", "206 with another ETag",
    ]

    @Test(arguments: unusableAnswers)
    func anUnusableAnswerToTheResumeRestartsWithoutARange(_ answer: String) async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let total = Self.body.count
        let rest = Self.body.suffix(from: Self.cut)
        let handler = interruptedOnce { request, attempt in
            guard attempt == 2 else { return .ranged(ResumableDownloadTests.body, for: request, etag: ResumableDownloadTests.etag) }
            let etag = ["ETag": ResumableDownloadTests.etag]
            switch answer {
            case "412": return .status(412, headers: etag)
            case "416": return .status(416, headers: ["Content-Range": "bytes */\(total)"])
            case "206 starting elsewhere":
                return .status(206, headers: etag.merging(["Content-Range": "bytes \(ResumableDownloadTests.cut + 1)-\(total - 1)/\(total)"]) { $1 }, body: Data(rest.dropFirst()))
            case "206 with another total":
                return .status(206, headers: etag.merging(["Content-Range": "bytes \(ResumableDownloadTests.cut)-\(total - 1)/\(total + 5)"]) { $1 }, body: Data(rest))
            case "206 without Content-Range":
                return .status(206, headers: etag, body: Data(rest))
            case "206 multipart/byteranges":
                return .status(206, headers: etag.merging(["Content-Type": "multipart/byteranges; boundary=X"]) { $1 }, body: Data("--X\r\n\r\n--X--\r\n".utf8))
            default:
                return .status(206, headers: ["ETag": "\"other\"", "Content-Range": "bytes \(ResumableDownloadTests.cut)-\(total - 1)/\(total)"], body: Data(rest))
            }
        }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(probe.isFinished, "\(answer): \(String(describing: probe.failure))")
            #expect(try Data(contentsOf: destination) == Self.body, "\(answer)")
            let requests = server.requests
            #expect(requests.count == 3, "\(answer)")
            #expect(requests.dropFirst().first?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
            #expect(requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(requests.last?.value(forHTTPHeaderField: "If-Range") == nil)
            #expect(try contents(of: folder) == ["file"])
        }
    }

    /// Continuations whose body does not fit their `Content-Range`: the download fails with
    /// `.badServerResponse`, nothing is written under the destination's name and nothing is kept.
    static let overlongContinuations: [String] = ["close-delimited", "chunked"]

    @Test(arguments: overlongContinuations)
    func aContinuationLongerThanItsRangeFailsAndKeepsNothing(_ framing: String) async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let total = Self.body.count
        let rest = Data(Self.body.suffix(from: Self.cut)) + Data(repeating: 0x2A, count: 30)
        let handler = interruptedOnce { _, _ in
            let head = "HTTP/1.1 206 Partial Content\r\nETag: \(ResumableDownloadTests.etag)\r\nAccept-Ranges: bytes\r\n"
                + "Content-Range: bytes \(ResumableDownloadTests.cut)-\(total - 1)/\(total)\r\n"
            if framing == "chunked" {
                let chunk = Data(String(rest.count, radix: 16).utf8) + Data("\r\n".utf8) + rest + Data("\r\n0\r\n\r\n".utf8)
                return .raw(Data((head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").utf8) + chunk)
            }
            return .raw(Data((head + "Connection: close\r\n\r\n").utf8) + rest)
        }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(Self.cut)-")
            let failure = try #require(probe.failure, "\(framing): a \(Self.body.count + 30)-byte file was accepted")
            #expect((failure as? URLError)?.code == .badServerResponse || (failure as? TransportError)?.urlError?.code == .badServerResponse, "\(failure)")
            #expect(DownloadResumeData(failure: failure) == nil)
            #expect(DownloadResumeData.kept(for: destination) == nil)
            #expect(try contents(of: folder).isEmpty, "\(framing): nothing is kept")
        }
    }

    @Test func aContentEncodedBodyIsNotResumed() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("zeros")
        let gzip = GzipTestData.zeros(count: 400_000)
        let count = Locked(0)
        let handler: LoopbackServer.Handler = { request in
            let attempt = count.withLock { count in
                count += 1
                return count
            }
            let response = LoopbackResponse.ranged(gzip, for: request, etag: ResumableDownloadTests.etag, headers: ["Content-Encoding": "gzip"])
            return attempt == 1 ? response.closingMidBody(afterBytes: gzip.count / 2) : response
        }
        try await withLoopbackServer(handler: handler) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/zeros")), to: destination))
            try await self.await(first)
            let failure = try #require(first.failure)
            #expect(DownloadResumeData(failure: failure) == nil)
            #expect(DownloadResumeData.kept(for: destination) == nil)
            #expect(try contents(of: folder).isEmpty)
            let second = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/zeros")), to: destination))
            try await self.await(second)
            #expect(second.isFinished, "\(String(describing: second.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(try Data(contentsOf: destination) == Data(count: 400_000))
        }
    }

    @Test func aWeakEntityTagIsNotAValidator() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let handler: LoopbackServer.Handler = { request in
            LoopbackResponse.ranged(ResumableDownloadTests.body, for: request, etag: "W/\"weak\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT")
                .closingMidBody(afterBytes: ResumableDownloadTests.cut)
        }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(probe)
            let failure = try #require(probe.failure)
            #expect(DownloadResumeData(failure: failure) == nil)
            #expect(try contents(of: folder).isEmpty)
        }
    }

    @Test func aLastModifiedDateStandsInForAMissingEntityTag() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        let date = "Tue, 15 Nov 1994 12:45:26 GMT"
        let count = Locked(0)
        let handler: LoopbackServer.Handler = { request in
            let attempt = count.withLock { count in
                count += 1
                return count
            }
            let response = LoopbackResponse.ranged(ResumableDownloadTests.body, for: request, lastModified: date)
            return attempt == 1 ? response.closingMidBody(afterBytes: ResumableDownloadTests.cut) : response
        }
        try await withLoopbackServer(handler: handler) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "If-Range") == date)
            #expect(server.sentBodyByteCount == Self.body.count)
            #expect(try Data(contentsOf: destination) == Self.body)
        }
    }

    @Test func aFoldedEntityTagNeverBecomesAHeaderWithALineBreak() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        // An obsolete line folding inside the ETag, and the connection lost after 1,000 of the
        // announced 300,000 bytes.
        var head = "HTTP/1.1 200 OK\r\nContent-Length: \(Self.body.count)\r\nAccept-Ranges: bytes\r\n"
        head += "ETag: \"a\r\n b\"\r\nConnection: close\r\n\r\n"
        let raw = Data(head.utf8) + Self.body.prefix(1000)
        try await withLoopbackServer(handler: { _ in .raw(raw) }) { server in
            let probe = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(probe)
            let failure = try #require(probe.failure)
            if let resume = DownloadResumeData(failure: failure) {
                #expect(!resume.validator.contains("\r") && !resume.validator.contains("\n"))
            }
            #expect(try !contents(of: folder).contains("file"))
        }
    }

    @Test func aTamperedSidecarStartsFromZero() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(first)
            let sidecar = try #require(try contents(of: folder).first { $0.hasSuffix(".transit-resume") })
            let url = folder.appendingPathComponent(sidecar)
            let json = try String(contentsOf: url, encoding: .utf8)
            try json.replacingOccurrences(of: #"\"v1\""#, with: #"\"v1\r\nX-Injected: 1\""#).write(to: url, atomically: true, encoding: .utf8)
            #expect(DownloadResumeData.kept(for: destination) == nil)
            let second = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(second)
            #expect(second.isFinished, "\(String(describing: second.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(server.requests.last?.value(forHTTPHeaderField: "X-Injected") == nil)
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(try contents(of: folder) == ["file"], "the damaged sidecar's partial file is removed")
        }
    }

    /// A victim file outside the download's folder, holding `contents`.
    private func makeVictim(_ contents: String = "precious bytes") throws -> (folder: URL, file: URL) {
        let folder = try makeDownloadFolder()
        let file = folder.appendingPathComponent("victim")
        try Data(contents.utf8).write(to: file)
        return (folder, file)
    }

    private func isSymbolicLink(_ url: URL) -> Bool {
        var status = stat()
        return lstat(url.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK
    }

    /// Interrupts a download into `destination` and replaces its kept partial file with what
    /// `replace` puts at the partial file's path.
    private func interruptAndReplacePartial(_ server: LoopbackServer, _ destination: URL, _ replace: (URL) throws -> Void) async throws -> DownloadResumeData {
        let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
        try await self.await(first)
        let failure = try #require(first.failure)
        let resume = try #require(DownloadResumeData(failure: failure))
        try FileManager.default.removeItem(at: resume.partialFile)
        try replace(resume.partialFile)
        return resume
    }

    @Test(arguments: ["symbolic link", "hard link"])
    func aKeptPartialFileThatIsALinkIsDiscardedAndItsTargetUntouched(_ kind: String) async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let victim = try makeVictim(String(repeating: "v", count: Self.cut + 10))
        defer { try? FileManager.default.removeItem(at: victim.folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            _ = try await interruptAndReplacePartial(server, destination) { partial in
                if kind == "symbolic link" {
                    try FileManager.default.createSymbolicLink(at: partial, withDestinationURL: victim.file)
                } else {
                    #expect(link(victim.file.path, partial.path) == 0)
                }
            }
            let second = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(second)
            #expect(second.isFinished, "\(kind): \(String(describing: second.failure))")
            #expect(try Data(contentsOf: victim.file) == Data(String(repeating: "v", count: Self.cut + 10).utf8), "\(kind): the link's target is untouched")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil, "\(kind): the download starts from zero")
            #expect(!isSymbolicLink(destination), "\(kind): the destination is a file of its own")
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(try contents(of: folder) == ["file"], "\(kind): the link is removed")
        }
    }

    @Test func resumeDataNamingALinkElsewhereIsNotFollowed() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let victim = try makeVictim(String(repeating: "v", count: Self.cut + 10))
        defer { try? FileManager.default.removeItem(at: victim.folder) }
        let destination = folder.appendingPathComponent("file")
        let handler: LoopbackServer.Handler = { .ranged(ResumableDownloadTests.body, for: $0, etag: ResumableDownloadTests.etag) }
        try await withLoopbackServer(handler: handler) { server in
            // Resume data whose partial file is a link in another folder, to the victim.
            let elsewhere = victim.folder.appendingPathComponent(".file.0000.transit-partial")
            try FileManager.default.createSymbolicLink(at: elsewhere, withDestinationURL: victim.file)
            let object: [String: Any] = [
                "url": server.url("/file").absoluteString, "validator": Self.etag, "bytesOnDisk": Self.cut,
                "totalBytes": Self.body.count, "partialFile": elsewhere.absoluteString,
            ]
            let resume = try JSONDecoder().decode(DownloadResumeData.self, from: JSONSerialization.data(withJSONObject: object))
            let probe = AwaitedProbe(makeClient().download(resuming: resume, to: destination))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(try Data(contentsOf: victim.file) == Data(String(repeating: "v", count: Self.cut + 10).utf8), "the link's target is untouched")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(!isSymbolicLink(destination))
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test(arguments: ["longer than the representation", "a folder"])
    func aKeptPartialFileThatCannotBeAPrefixIsDiscarded(_ kind: String) async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            _ = try await interruptAndReplacePartial(server, destination) { partial in
                if kind == "a folder" {
                    try FileManager.default.createDirectory(at: partial, withIntermediateDirectories: false)
                } else {
                    try Data(count: Self.body.count + 1).write(to: partial)
                }
            }
            let second = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(second)
            #expect(second.isFinished, "\(kind): \(String(describing: second.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil, "\(kind)")
            #expect(try Data(contentsOf: destination) == Self.body)
        }
    }

    @Test func aSidecarThatIsALinkIsNotRead() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let other = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: other) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(first)
            let sidecar = folder.appendingPathComponent(".file.transit-resume")
            let moved = other.appendingPathComponent("sidecar.json")
            try FileManager.default.moveItem(at: sidecar, to: moved)
            try FileManager.default.createSymbolicLink(at: sidecar, withDestinationURL: moved)
            #expect(DownloadResumeData.kept(for: destination) == nil)
            let second = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(second)
            #expect(second.isFinished, "\(String(describing: second.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(FileManager.default.fileExists(atPath: moved.path), "the link's target is not removed")
        }
    }

    @Test func aKeptDownloadOfAnotherURLIsDiscarded() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(first)
            #expect(DownloadResumeData.kept(for: destination) != nil)
            let other = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/other")), to: destination))
            try await self.await(other)
            #expect(other.isFinished, "\(String(describing: other.failure))")
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test func cancellingRemovesThePartialFile() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("slow")
        let pieces = Array(repeating: Data(repeating: 0x42, count: 1024), count: 1000)
        let handler: LoopbackServer.Handler = { _ in
            .paced(pieces, interval: .milliseconds(500), headers: ["Accept-Ranges": "bytes", "ETag": ResumableDownloadTests.etag])
        }
        try await withLoopbackServer(handler: handler) { server in
            let started = IntegrationGate()
            let token = makeClient().download(URLRequest(url: server.url("/slow")), to: destination).observe(Observer { event in
                if case .value(.progress(let progress)) = event, progress.bytesReceived > 0 { started.open() }
            })
            try #require(await started.wait(timeout: .seconds(60)), "no progress within 60 s")
            token.cancel()
            #expect(await server.waitUntil { server.clientClosedConnectionCount >= 1 }, "the transfer was cancelled")
            #expect(try contents(of: folder).isEmpty)
            #expect(DownloadResumeData.kept(for: destination) == nil)
        }
    }

    @Test func withDownloadTasksAnInterruptedDownloadStartsAgainFromZero() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let probe = AwaitedProbe(makeClient(downloadTasks: true).download(URLRequest(url: server.url("/file")), to: destination).retry(1))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(server.requests.count == 2)
            #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == nil)
            #expect(try contents(of: folder) == ["file"])
        }
    }

    @Test func withDownloadTasksExplicitResumeContinuesOverParts() async throws {
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file")
        try await withLoopbackServer(handler: interruptedOnce()) { server in
            let first = AwaitedProbe(makeClient().download(URLRequest(url: server.url("/file")), to: destination))
            try await self.await(first)
            let firstFailure = try #require(first.failure)
            let resume = try #require(DownloadResumeData(failure: firstFailure))
            let probe = AwaitedProbe(makeClient(downloadTasks: true).download(resuming: resume, to: destination))
            try await self.await(probe)
            #expect(probe.isFinished, "\(String(describing: probe.failure))")
            #expect(try Data(contentsOf: destination) == Self.body)
            #expect(server.sentBodyByteCount == Self.body.count)
            #expect(try contents(of: folder) == ["file"])
        }
    }
}

@Suite("DownloadResumeData")
struct DownloadResumeDataTests {
    private func json(validator: String = "\"v1\"", bytes: Int64 = 10, total: Int64 = 20, partial: String = "/tmp/.f.ABC.transit-partial", url: String = "https://example.com/f") -> Data {
        let object: [String: Any] = ["url": url, "validator": validator, "bytesOnDisk": bytes, "totalBytes": total, "partialFile": "file://" + partial]
        return (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
    }

    @Test func aWellFormedValueDecodes() throws {
        let value = try JSONDecoder().decode(DownloadResumeData.self, from: json())
        #expect(value.validator == "\"v1\"")
        #expect(value.bytesOnDisk == 10)
        #expect(value.totalBytes == 20)
    }

    @Test(arguments: [
        ("validator with a line break", "\"a\r\nb\"", Int64(10), Int64(20), "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("weak validator", "W/\"a\"", 10, 20, "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("date with a line break", "Tue, 15 Nov\n1994", 10, 20, "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("no bytes", "\"a\"", 0, 20, "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("all bytes", "\"a\"", 20, 20, "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("negative", "\"a\"", -5, 20, "/tmp/.f.A.transit-partial", "https://example.com/f"),
        ("another file", "\"a\"", 10, 20, "/etc/passwd", "https://example.com/f"),
        ("another scheme", "\"a\"", 10, 20, "/tmp/.f.A.transit-partial", "file:///etc/passwd"),
    ])
    func aMalformedValueDoesNotDecode(_ label: String, _ validator: String, _ bytes: Int64, _ total: Int64, _ partial: String, _ url: String) {
        #expect(throws: DecodingError.self, "\(label)") {
            try JSONDecoder().decode(DownloadResumeData.self, from: json(validator: validator, bytes: bytes, total: total, partial: partial, url: url))
        }
    }

    @Test func anErrorWithoutResumeDataHasNone() {
        #expect(DownloadResumeData(failure: URLError(.networkConnectionLost)) == nil)
        #expect(DownloadResumeData(failure: CancellationError()) == nil)
    }
}
