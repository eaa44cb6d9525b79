import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

private struct Note: Codable, Equatable, Sendable {
    var text: String
}

/// Every body through every verb that sends one: `Data`, JSON, a URL-encoded form, multipart and
/// a file, each with its `Content-Type`, prepared before the modifier on every attempt.
@Suite("RequestBody through the RESTAPI verbs")
struct RequestBodyTests {
    let transport = StubTransport()
    let scheduler = TestScheduler()

    init() {
        transport.stub().thenRespond(.text("ok"))
    }

    private func recordingService(_ transport: BodyRecordingTransport) -> BodyService {
        BodyService(client: HTTPClient(transport: transport) { $0.scheduler = scheduler })
    }

    @Test("put, patch and delete send a URL-encoded form with its Content-Type",
          arguments: [HTTPMethod.put, .patch, .delete])
    func aFormThroughEveryVerb(method: HTTPMethod) throws {
        let api = StubbedService(transport: transport)
        let form: URLEncodedForm = ["theme": "dark", "note": "a+b & c"]
        let signal: Signal<HTTPResponse, any Error>
        switch method {
        case .put: signal = api.put(endpoint: "settings", body: .form(form))
        case .patch: signal = api.patch(endpoint: "settings", body: .form(form))
        default: signal = api.delete(endpoint: "settings", body: .form(form))
        }
        let probe = RequestProbe(signal)
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == method.rawValue)
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.httpBody == Data("theme=dark&note=a%2Bb+%26+c".utf8))
    }

    @Test("patch and delete send an in-memory multipart form with its boundary",
          arguments: [HTTPMethod.patch, .delete])
    func aMultipartFormThroughPatchAndDelete(method: HTTPMethod) throws {
        let api = StubbedService(transport: transport)
        var form = MultipartFormData()
        form.append("Ann", name: "user")
        form.append(Data([1, 2, 3]), name: "avatar", filename: "a.png", contentType: "image/png")
        let signal = method == .patch
            ? api.patch(endpoint: "profile", body: .multipart(form))
            : api.delete(endpoint: "profile", body: .multipart(form))
        let probe = RequestProbe(signal)
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == method.rawValue)
        let contentType = try #require(sent.value(forHTTPHeaderField: "Content-Type"))
        #expect(contentType == form.contentType)
        let body = try #require(sent.httpBody)
        #expect(body == (try form.encodedData()))
        let parts = try MultipartFormDataParser.parse(body, contentType: contentType)
        #expect(parts.map(\.name) == ["user", "avatar"])
        #expect(parts[1].contentType == "image/png")
    }

    @Test("delete and the general verb send JSON with Content-Type application/json")
    func jsonThroughDeleteAndRequest() throws {
        let api = StubbedService(transport: transport)
        _ = RequestProbe(api.delete(endpoint: "notes/1", body: .json(Note(text: "gone"))))
        _ = RequestProbe(api.request(method: "PURGE", endpoint: "notes/2", body: .json(Note(text: "purged"))))
        let sent = transport.requests
        #expect(sent.map(\.httpMethod) == ["DELETE", "PURGE"])
        #expect(sent.map { $0.value(forHTTPHeaderField: "Content-Type") } == ["application/json", "application/json"])
        #expect(try sent.map { try JSONDecoder().decode(Note.self, from: try #require($0.httpBody)) } == [Note(text: "gone"), Note(text: "purged")])
    }

    @Test("data with a content type sets it; Data alone sets none; an absent optional sends no body")
    func dataBodies() throws {
        let api = StubbedService(transport: transport)
        let bytes = Data("raw".utf8)
        let none: Data? = nil
        _ = RequestProbe(api.post(endpoint: "a", body: .data(bytes, contentType: "text/plain; charset=utf-8")))
        _ = RequestProbe(api.post(endpoint: "b", body: bytes))
        _ = RequestProbe(api.post(endpoint: "c", body: none))
        let sent = transport.requests
        #expect(sent.count == 3)
        #expect(sent[0].value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
        #expect(sent[0].httpBody == bytes)
        #expect(sent[1].value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(sent[1].httpBody == bytes)
        #expect(sent[2].httpBody == nil)
    }

    @Test("a content type with a line break fails the request and sends nothing")
    func aBadContentTypeSendsNothing() throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.put(endpoint: "a", body: .data(Data("x".utf8), contentType: "text/plain\r\nX-Injected: 1")))
        #expect(probe.failure as? URLRequestError == .invalidHeaderValue(name: "Content-Type"))
        #expect(probe.terminalCount == 1)
        #expect(transport.requests.isEmpty)
    }

    @Test("the modifier runs after the body is prepared, so it may replace the content type of every kind")
    func theModifierHasTheLastWord() throws {
        let api = StubbedService(transport: transport)
        var form = MultipartFormData()
        form.append("v", name: "n")
        let bodies: [RequestBody] = [.json(Note(text: "n")), .form(["a": "1"]), .multipart(form), .data(Data("d".utf8), contentType: "text/plain")]
        for body in bodies {
            _ = RequestProbe(api.patch(endpoint: "x", body: body) {
                try $0.settingValue("application/vnd.example", forHTTPHeaderField: "Content-Type")
            })
        }
        #expect(transport.requests.count == bodies.count)
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "Content-Type") == "application/vnd.example" })
        #expect(transport.requests.allSatisfy { $0.httpBody?.isEmpty == false })
    }

    @Test("a multipart part that cannot be encoded fails the signal before the modifier runs, and nothing is sent")
    func aMultipartEncodingErrorSendsNothing() throws {
        let api = StubbedService(transport: transport)
        var form = MultipartFormData()
        form.append(Data("x".utf8), name: "bad", contentType: "text/plain\r\nX-Injected: 1")
        let modifierRuns = SharedValue(0)
        let probe = RequestProbe(api.put(endpoint: "upload", body: .multipart(form)) { request in
            modifierRuns.update { $0 += 1 }
            return request
        })
        #expect(probe.failure as? MultipartFormDataError == .invalidContentType(partName: "bad"))
        #expect(probe.terminalCount == 1)
        #expect(modifierRuns.value == 0)
        #expect(transport.requests.isEmpty)
    }

    @Test("a file body through put is streamed from the file, with its content type, on every attempt")
    func aFileThroughPut() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.file("movie.mp4", Data("not really a movie".utf8))
        let transport = BodyRecordingTransport([.status(201)])
        let api = recordingService(transport)
        let signal = api.put(endpoint: "videos/42", body: .file(file, contentType: "video/mp4")) {
            try $0.settingValue("1", forHTTPHeaderField: "X-Attempt")
        }
        #expect(transport.exchanges.isEmpty)
        let first = RequestProbe(signal)
        let second = RequestProbe(signal)
        #expect(first.values.first?.statusCode == 201)
        #expect(second.isFinished)
        let exchanges = transport.exchanges
        #expect(exchanges.count == 2)
        let sent = try #require(exchanges.first)
        #expect(sent.request.httpMethod == "PUT")
        #expect(sent.request.url?.absoluteString == "https://api.example.com/v1/videos/42")
        #expect(sent.request.httpBody == nil)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == "video/mp4")
        #expect(sent.request.value(forHTTPHeaderField: "X-Attempt") == "1")
        #expect(sent.bodyFile == file)
        #expect(sent.fileBytes == Data("not really a movie".utf8))
        // The file is the caller's: it is sent, never removed.
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test("a file body with no content type sends none")
    func aFileWithoutAContentType() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.file("blob", Data([9, 9]))
        let transport = BodyRecordingTransport([.status(200)])
        let probe = RequestProbe(recordingService(transport).request(method: .post, endpoint: "blobs", body: .file(file)))
        #expect(probe.isFinished)
        let sent = try #require(transport.exchanges.first)
        #expect(sent.bodyFile == file)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test("stream sends a file body and a multipart form written to a temporary file, which is removed at the end")
    func streamTakesEveryBody() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.file("log.txt", Data("lines".utf8))
        let transport = BodyRecordingTransport([.status(200)])
        let api = recordingService(transport)
        let streamed = RequestProbe(api.stream(method: .post, endpoint: "ingest", body: .file(file, contentType: "text/plain")))
        #expect(streamed.isFinished)
        #expect(transport.exchanges.first?.bodyFile == file)

        var form = MultipartFormData()
        form.temporaryDirectory = folder.url.appendingPathComponent("bodies")
        try FileManager.default.createDirectory(at: form.temporaryDirectory, withIntermediateDirectories: true)
        form.append(fileAt: file, name: "log")
        let uploaded = RequestProbe(api.stream(method: .put, endpoint: "logs", body: .multipart(form)))
        #expect(transport.exchanges.count == 1, "the form is written on the client's scheduler")
        scheduler.advance()
        #expect(uploaded.isFinished)
        let sent = try #require(transport.exchanges.last)
        #expect(sent.request.httpMethod == "PUT")
        #expect(sent.request.value(forHTTPHeaderField: "Content-Type") == form.contentType)
        let body = try #require(sent.fileBytes)
        #expect(sent.request.value(forHTTPHeaderField: "Content-Length") == String(body.count))
        let parts = try MultipartFormDataParser.parse(body, contentType: form.contentType)
        #expect(parts.first?.body == Data("lines".utf8))
        #expect((try? FileManager.default.contentsOfDirectory(atPath: form.temporaryDirectory.path)) == [])
    }

    @Test("a bad method fails before a body is prepared and sends nothing")
    func aBadMethodPreparesNoBody() throws {
        let api = StubbedService(transport: transport)
        let encodings = SharedValue(0)
        let probe = RequestProbe(api.request(method: "NOT A TOKEN", endpoint: "x", body: .json(CountedNote(encodings: encodings))))
        #expect(probe.failure as? URLRequestError == .invalidMethod("NOT A TOKEN"))
        #expect(encodings.value == 0)
        #expect(transport.requests.isEmpty)
    }
}

/// Counts its encodings.
private struct CountedNote: Encodable, Sendable {
    let encodings: SharedValue<Int>
    func encode(to encoder: any Encoder) throws {
        encodings.update { $0 += 1 }
        var container = encoder.singleValueContainer()
        try container.encode("note")
    }
}

private struct BodyService: RESTAPI {
    let baseURL = "https://api.example.com/v1"
    let client: HTTPClient
}
