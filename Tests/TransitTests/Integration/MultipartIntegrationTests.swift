import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Form and multipart bodies over real sockets: `URLSessionTransport` against a loopback server.
/// Wall-clock tests with generous bounds; every wait is on a real condition.
@Suite("Bodies over loopback")
struct MultipartIntegrationTests {
    private struct Service: RESTAPI {
        let baseURL: String
        let client: HTTPClient

        /// `patience` bounds the request (URLSession's idle timeout and the client's deadline):
        /// far above what a request takes, since under the thread sanitizer, with the whole suite
        /// running in parallel on two cores, a 50 MiB upload has taken 80 s.
        init(_ server: LoopbackServer, patience: Duration = .seconds(300)) {
            baseURL = server.url().absoluteString
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = patience.timeInterval
            client = HTTPClient(transport: URLSessionTransport(configuration: configuration)) { $0.deadline = .after(patience) }
        }
    }

    /// Subscribes to `signal` and waits (real time, bounded) for its terminal event.
    private func await(_ signal: Signal<HTTPResponse, any Error>) async throws -> AwaitedProbe<HTTPResponse> {
        let probe = AwaitedProbe(signal)
        try #require(await probe.ended.wait(timeout: .seconds(300)), "no terminal event within 300 s")
        #expect(probe.violations == 0)
        return probe
    }

    @Test func a50MiBFileArrivesByteForByteAndItsTemporaryBodyIsRemoved() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let payload = pseudoRandomBytes(50 << 20, seed: 50)
        let source = try folder.file("video.mp4", payload)
        let bodies = try ScratchFolder()
        defer { bodies.remove() }
        var form = MultipartFormData()
        form.temporaryDirectory = bodies.url
        form.append("Holiday \"2025\"", name: "title")
        form.append(fileAt: source, name: "video", contentType: "video/mp4")
        form.append(Data([0, 1, 2]), name: "thumb", filename: "t.bin")
        try await withLoopbackServer(handler: { _ in .text("stored", status: 201) }) { server in
            let probe = try await self.await(Service(server).post(endpoint: "uploads", body: .multipart(form)))
            #expect(probe.values.first?.statusCode == 201)
            // Removed before the response was delivered.
            #expect(bodies.contents.isEmpty)

            let received = try #require(server.requests.first)
            #expect(received.method == "POST")
            #expect(received.path == "/uploads")
            let contentType = try #require(received.headers.value(for: "Content-Type"))
            #expect(contentType == form.contentType)
            #expect(received.headers.value(for: "Content-Length") == String(received.body.count))
            let parts = try MultipartFormDataParser.parse(received.body, contentType: contentType)
            #expect(parts.map(\.name) == ["title", "video", "thumb"])
            #expect(String(decoding: parts[0].body, as: UTF8.self) == "Holiday \"2025\"")
            #expect(parts[0].rawName == "title")
            #expect(parts[1].filename == "video.mp4")
            #expect(parts[1].contentType == "video/mp4")
            #expect(parts[1].body.count == payload.count)
            #expect(parts[1].body == payload)
            #expect(parts[2].body == Data([0, 1, 2]))
            #expect(parts[2].contentType == "application/octet-stream")
        }
    }

    @Test func aCancelledUploadRemovesItsBodyAndClosesTheConnection() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let bodies = try ScratchFolder()
        defer { bodies.remove() }
        var form = MultipartFormData()
        form.temporaryDirectory = bodies.url
        form.append(fileAt: try folder.file("doc.pdf", pseudoRandomBytes(1 << 20, seed: 2)), name: "doc")
        // The server answers only after an hour (stopping it ends the wait), and the request
        // would time out only then, so it is in flight when cancelled however long this test's
        // task waits for a thread. (With a minute for both, a suite run under the thread
        // sanitizer once resumed the task after the request had timed out.)
        try await withLoopbackServer(handler: { _ in LoopbackResponse.status(200).delayed(by: .seconds(3600)) }) { server in
            let probe = RequestProbe(Service(server, patience: .seconds(3600)).post(endpoint: "docs", body: .multipart(form)))
            #expect(await server.waitUntil(timeout: .seconds(300)) { server.requests.count == 1 })
            #expect(bodies.contents.count == 1)
            probe.cancel()
            #expect(bodies.contents.isEmpty)
            #expect(await server.waitUntil(timeout: .seconds(300)) { server.clientClosedConnectionCount >= 1 })
            #expect(probe.events.isEmpty)
        }
    }

    @Test func anUnreadableFileSendsNothing() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        var form = MultipartFormData()
        form.temporaryDirectory = folder.url
        form.append("x", name: "title")
        form.append(fileAt: folder.url.appendingPathComponent("missing.bin"), name: "file")
        try await withLoopbackServer(handler: { _ in .status(200) }) { server in
            let probe = try await self.await(Service(server).post(endpoint: "uploads", body: .multipart(form)))
            let error = try #require(probe.failure as? MultipartFormDataError)
            #expect(error.description.contains("missing.bin"))
            #expect(server.connectionCount == 0)
            #expect(server.requests.isEmpty)
            #expect(folder.contents.isEmpty)
        }
    }

    @Test func aURLEncodedFormArrivesAsSent() async throws {
        let form: URLEncodedForm = ["user": "ann lee", "note": "a+b=c & d\r\n", "tag": "x", "tag": "ü"]
        try await withLoopbackServer(handler: { _ in .status(204) }) { server in
            let probe = try await self.await(Service(server).post(endpoint: "login", body: .form(form)))
            #expect(probe.values.first?.statusCode == 204)
            let received = try #require(server.requests.first)
            #expect(received.headers.value(for: "Content-Type") == "application/x-www-form-urlencoded")
            #expect(received.body == Data("user=ann+lee&note=a%2Bb%3Dc+%26+d%0D%0A&tag=x&tag=%C3%BC".utf8))
            #expect(URLEncodedForm(parsing: received.body) == form)
        }
    }

    @Test func aSmallMultipartFormIsSentFromMemory() async throws {
        var form = MultipartFormData()
        form.append("v", name: "field")
        try await withLoopbackServer(handler: { _ in .status(200) }) { server in
            let probe = try await self.await(Service(server).put(endpoint: "fields", body: .multipart(form)))
            #expect(probe.isFinished)
            let received = try #require(server.requests.first)
            #expect(received.method == "PUT")
            #expect(received.body == (try form.encodedData()))
        }
    }

    @Test func aFormPutAMultipartPatchAndAFilePutArriveWithTheirContentTypes() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let payload = pseudoRandomBytes(300 << 10, seed: 7)
        let source = try folder.file("clip.bin", payload)
        let bodies = try ScratchFolder()
        defer { bodies.remove() }
        var multipart = MultipartFormData()
        multipart.temporaryDirectory = bodies.url
        multipart.append("Holiday", name: "title")
        multipart.append(fileAt: source, name: "clip")
        try await withLoopbackServer(handler: { _ in .status(204) }) { server in
            let service = Service(server)
            let form = try await self.await(service.put(endpoint: "settings", body: .form(["theme": "dark"])))
            let patched = try await self.await(service.patch(endpoint: "media/1", body: .multipart(multipart)))
            let filed = try await self.await(service.put(endpoint: "raw/1", body: .file(source, contentType: "application/x-clip")))
            #expect([form, patched, filed].map { $0.values.first?.statusCode } == [204, 204, 204])
            #expect(bodies.contents.isEmpty)

            let received = server.requests
            #expect(received.map(\.method) == ["PUT", "PATCH", "PUT"])
            #expect(received[0].headers.value(for: "Content-Type") == "application/x-www-form-urlencoded")
            #expect(received[0].body == Data("theme=dark".utf8))
            let contentType = try #require(received[1].headers.value(for: "Content-Type"))
            #expect(contentType == multipart.contentType)
            let parts = try MultipartFormDataParser.parse(received[1].body, contentType: contentType)
            #expect(parts.map(\.name) == ["title", "clip"])
            #expect(parts[1].body == payload)
            #expect(received[2].headers.value(for: "Content-Type") == "application/x-clip")
            #expect(received[2].body == payload)
        }
    }
}
