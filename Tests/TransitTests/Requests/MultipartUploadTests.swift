import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// A transport that records every exchange with the bytes its body file held at that moment, and
/// answers as told: a status (with headers), a transport failure, or nothing until cancelled.
final class BodyRecordingTransport: HTTPTransport {
    enum Answer: Sendable {
        case status(Int, headers: [String: String] = [:])
        case failure(URLError.Code)
        case hang
    }

    struct Exchange: Sendable {
        var request: URLRequest
        var bodyFile: URL?
        /// The body file's contents when the exchange started (`nil` without a file, or if it
        /// could not be read).
        var fileBytes: Data?
    }

    private let state: Locked<(answers: [Answer], exchanges: [Exchange], cancelled: Int)>

    /// Answers the exchanges with `answers` in order; the last one repeats.
    init(_ answers: [Answer]) {
        state = Locked((answers, [], 0))
    }

    var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    var cancelledCount: Int { state.withLock { $0.cancelled } }

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [state] observer in
            let bytes = request.bodyFile.flatMap { try? Data(contentsOf: $0) }
            let answer = state.withLock { state -> Answer in
                state.exchanges.append(Exchange(request: request.urlRequest, bodyFile: request.bodyFile, fileBytes: bytes))
                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
            }
            switch answer {
            case .status(let status, let headers):
                let url = request.urlRequest.url!
                observer.send(.head(HTTPResponseHead(url: url, statusCode: status, headerFields: headers)))
                observer.finish()
                return nil
            case .failure(let code):
                observer.fail(URLError(code))
                return nil
            case .hang:
                return { state.withLock { $0.cancelled += 1 } }
            }
        }
    }
}

/// `HTTPClient.send(_:multipart:)`: in memory or through a temporary file, written on the
/// client's scheduler (virtual time here) and removed whenever the request ends.
@Suite("multipart/form-data: sending")
struct MultipartUploadTests {
    let scheduler = TestScheduler()

    private func client(_ transport: BodyRecordingTransport) -> HTTPClient {
        HTTPClient(transport: transport) {
            $0.userAgent = "MultipartTests"
            $0.scheduler = scheduler
        }
    }

    private var request: URLRequest {
        var request = URLRequest(url: URL(string: "https://api.example.com/uploads")!)
        request.httpMethod = "POST"
        return request
    }

    /// A form with a text field and a file part (`folder/clip.bin`), whose temporary body goes
    /// to `folder/bodies` (see ``bodyFiles(_:)``).
    private func fileForm(_ folder: ScratchFolder, payload: Data = Data("file content".utf8)) throws -> MultipartFormData {
        var form = MultipartFormData()
        form.temporaryDirectory = folder.url.appendingPathComponent("bodies")
        try FileManager.default.createDirectory(at: form.temporaryDirectory, withIntermediateDirectories: true)
        form.append("Holiday", name: "title")
        form.append(fileAt: try folder.file("clip.bin", payload), name: "clip")
        return form
    }

    /// The temporary bodies a ``fileForm(_:payload:)`` left in `folder`.
    private func bodyFiles(_ folder: ScratchFolder) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder.url.appendingPathComponent("bodies").path)) ?? []
    }

    @Test func aSmallInMemoryFormIsSentAsData() throws {
        let transport = BodyRecordingTransport([.status(201)])
        var form = MultipartFormData()
        form.append("Ann", name: "user")
        var withType = request
        withType.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let probe = RequestProbe(client(transport).send(withType, multipart: form))
        // No scheduler step: the body is encoded in the subscription, like JSON.
        #expect(probe.isFinished)
        let sent = try #require(transport.exchanges.first)
        #expect(sent.bodyFile == nil)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == form.contentType)
        #expect(sent.request.httpBody == (try form.encodedData()))
    }

    @Test func aFormWithAFileIsWrittenOnTheSchedulerThenUploadedFromAFileThatIsRemovedAtTheEnd() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let form = try fileForm(folder)
        let transport = BodyRecordingTransport([.status(201)])
        let probe = RequestProbe(client(transport).send(request, multipart: form))
        // Nothing is written or sent on the subscribing thread.
        #expect(transport.exchanges.isEmpty)
        #expect(bodyFiles(folder).isEmpty)
        scheduler.advance()
        #expect(probe.isFinished)
        #expect(probe.values.first?.statusCode == 201)
        let sent = try #require(transport.exchanges.first)
        let file = try #require(sent.bodyFile)
        #expect(file.deletingLastPathComponent().lastPathComponent == "bodies")
        let body = try #require(sent.fileBytes)
        #expect(sent.request.httpBody == nil)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == form.contentType)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Length") == String(body.count))
        let parts = try MultipartFormDataParser.parse(body, contentType: form.contentType)
        #expect(parts.map(\.name) == ["title", "clip"])
        #expect(parts[1].body == Data("file content".utf8))
        #expect(parts[1].filename == "clip.bin")
        // Removed before the terminal event was delivered.
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(bodyFiles(folder).isEmpty)
    }

    @Test func theFileIsRemovedWhenTheRequestFails() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([.failure(.networkConnectionLost)])
        let probe = RequestProbe(client(transport).send(request, multipart: try fileForm(folder)))
        scheduler.advance()
        #expect(urlErrorCode(probe.failure) == .networkConnectionLost)
        #expect(transport.exchanges.first?.fileBytes != nil)
        #expect(bodyFiles(folder).isEmpty)
    }

    @Test func theFileIsRemovedWhenTheRequestIsCancelledInFlight() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([.hang])
        let probe = RequestProbe(client(transport).send(request, multipart: try fileForm(folder)))
        scheduler.advance()
        #expect(transport.exchanges.count == 1)
        #expect(bodyFiles(folder).count == 1)
        probe.cancel()
        #expect(transport.cancelledCount == 1)
        #expect(bodyFiles(folder).isEmpty)
        #expect(probe.terminalCount == 0)
    }

    @Test func aRequestCancelledBeforeItsBodyIsWrittenWritesAndSendsNothing() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([.status(200)])
        let probe = RequestProbe(client(transport).send(request, multipart: try fileForm(folder)))
        probe.cancel()
        scheduler.advance()
        #expect(transport.exchanges.isEmpty)
        #expect(bodyFiles(folder).isEmpty)
        #expect(probe.events.isEmpty)
    }

    @Test func aRequestCancelledWhileItsBodyIsBeingWrittenLeavesNoFile() async throws {
        // Real threads: the body is written on a global queue while the test cancels as soon as
        // the temporary file appears, wherever the writer then is.
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let form = try fileForm(folder, payload: pseudoRandomBytes(8 << 20, seed: 9))
        for _ in 0..<5 {
            let transport = BodyRecordingTransport([.hang])
            let client = HTTPClient(transport: transport) { $0.scheduler = DispatchQueue.global() }
            let probe = RequestProbe(client.send(request, multipart: form))
            #expect(await eventually { !bodyFiles(folder).isEmpty })
            probe.cancel()
            #expect(await eventually { bodyFiles(folder).isEmpty })
            #expect(probe.terminalCount == 0)
        }
    }

    @Test func anUnreadableFileFailsWithItsNameAndNothingIsSent() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = MultipartFormData()
        form.temporaryDirectory = folder.url
        form.append("x", name: "title")
        let missing = folder.url.appendingPathComponent("gone.mov")
        form.append(fileAt: missing, name: "video")
        let transport = BodyRecordingTransport([.status(200)])
        let probe = RequestProbe(client(transport).send(request, multipart: form))
        scheduler.advance()
        let error = try #require(probe.failure as? MultipartFormDataError)
        guard case .unreadableFile(missing, "video", _) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(probe.terminalCount == 1)
        #expect(transport.exchanges.isEmpty)
        #expect(folder.contents.isEmpty)
    }

    @Test func aRefusedRequestFailsBeforeAnythingIsWritten() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var bad = request
        bad.httpMethod = "NOT A TOKEN"
        let transport = BodyRecordingTransport([.status(200)])
        let probe = RequestProbe(client(transport).send(bad, multipart: try fileForm(folder)))
        #expect(probe.failure as? URLRequestError == .invalidMethod("NOT A TOKEN"))
        #expect(scheduler.pendingCount == 0)
        #expect(bodyFiles(folder).isEmpty)
        #expect(transport.exchanges.isEmpty)
    }

    @Test func aLargeInMemoryFormGoesThroughAFileToo() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = MultipartFormData()
        form.temporaryDirectory = folder.url
        form.maxInMemoryBodyBytes = 100
        form.append(Data(repeating: 7, count: 101), name: "blob")
        let transport = BodyRecordingTransport([.status(200)])
        let probe = RequestProbe(client(transport).send(request, multipart: form))
        #expect(transport.exchanges.isEmpty)
        scheduler.advance()
        #expect(probe.isFinished)
        let sent = try #require(transport.exchanges.first)
        #expect(sent.bodyFile != nil)
        #expect(sent.fileBytes == (try form.encodedData()))
        #expect(folder.contents.isEmpty)
    }

    @Test func aRedirectThatKeepsTheBodySendsTheSameFileAgain() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([
            .status(307, headers: ["Location": "https://api.example.com/uploads/v2"]), .status(201),
        ])
        let probe = RequestProbe(client(transport).send(request, multipart: try fileForm(folder)))
        scheduler.advance()
        #expect(probe.values.first?.statusCode == 201)
        let exchanges = transport.exchanges
        #expect(exchanges.count == 2)
        #expect(exchanges.last?.request.url?.path == "/uploads/v2")
        #expect(exchanges.last?.fileBytes != nil)
        #expect(exchanges.last?.fileBytes == exchanges.first?.fileBytes)
        #expect(bodyFiles(folder).isEmpty)
    }

    @Test func everySubscriptionWritesItsOwnFile() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([.status(200)])
        let signal = client(transport).send(request, multipart: try fileForm(folder))
        let first = RequestProbe(signal)
        let second = RequestProbe(signal)
        scheduler.advance()
        #expect(first.isFinished && second.isFinished)
        let files = transport.exchanges.compactMap(\.bodyFile)
        #expect(files.count == 2)
        #expect(Set(files).count == 2)
        #expect(bodyFiles(folder).isEmpty)
    }

    // MARK: through a service

    @Test func aServicePostsAMultipartFormAndItsModifierRuns() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let transport = BodyRecordingTransport([.status(201)])
        let api = MultipartService(client: client(transport))
        let form = try fileForm(folder)
        let probe = RequestProbe(api.post(endpoint: "media?album=1", body: .multipart(form)) {
            var request = $0
            request.setValue("abc", forHTTPHeaderField: "X-Upload-Key")
            return request
        })
        scheduler.advance()
        #expect(probe.isFinished)
        let sent = try #require(transport.exchanges.first)
        #expect(sent.request.httpMethod == "POST")
        #expect(sent.request.url?.absoluteString == "https://api.example.com/v1/media?album=1")
        #expect(sent.request.value(forHTTPHeaderField: "X-Upload-Key") == "abc")
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == form.contentType)
        #expect(bodyFiles(folder).isEmpty)
    }

    @Test func aServiceWithABadEndpointSendsNothing() {
        let transport = BodyRecordingTransport([.status(201)])
        let api = MultipartService(client: client(transport))
        var form = MultipartFormData()
        form.append("v", name: "n")
        let probe = RequestProbe(api.put(endpoint: "bad path", body: .multipart(form)))
        #expect(URLError.matches(probe.failure, .badURL))
        #expect(transport.exchanges.isEmpty)
    }

    @Test func aServiceSendsAnyMethod() throws {
        let transport = BodyRecordingTransport([.status(200)])
        let api = MultipartService(client: client(transport))
        var form = MultipartFormData()
        form.append("v", name: "n")
        let probe = RequestProbe(api.request(method: .patch, endpoint: "media/1", body: .multipart(form)))
        #expect(probe.isFinished)
        #expect(transport.exchanges.first?.request.httpMethod == "PATCH")
    }
}

private struct MultipartService: RESTAPI {
    let baseURL = "https://api.example.com/v1"
    let client: HTTPClient
}
