import Foundation
import HTTPTypes
import OpenAPIRuntime
import Signals
import Synchronization
import Testing
import Transit
@testable import TransitOpenAPI

/// A response signal the test drives by hand, and whether its subscription was cancelled.
private final class ManualParts: Sendable {
    private let state = Mutex<(observer: Observer<HTTPResponsePart, any Error>?, cancelled: Bool)>((nil, false))

    var signal: Signal<HTTPResponsePart, any Error> {
        Signal { observer in
            self.state.withLock { $0.observer = observer }
            return { self.state.withLock { $0.cancelled = true } }
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func send(_ event: Event<HTTPResponsePart, any Error>) {
        state.withLock { $0.observer }?.send(event)
    }
}

private let head = HTTPResponseHead(url: URL(string: "http://127.0.0.1/x")!, statusCode: 200, fields: [])

@Suite struct FieldConversionTests {
    @Test func requestFieldsKeepOrderRepeatsAndSpelling() {
        var fields = HTTPFields()
        fields.append(HTTPTypes.HTTPField(name: .init("X-Trace")!, value: "1"))
        fields.append(HTTPTypes.HTTPField(name: .accept, value: "application/json"))
        fields.append(HTTPTypes.HTTPField(name: .init("x-trace")!, value: "2"))
        let converted = FieldConversion.transitFields(fields)
        #expect(converted == [
            Transit.HTTPField(name: "X-Trace", value: "1"),
            Transit.HTTPField(name: "Accept", value: "application/json"),
            Transit.HTTPField(name: "x-trace", value: "2"),
        ])
    }

    @Test func responseFieldsKeepOrderAndRepeatsAndMatchCaseInsensitively() throws {
        let head = HTTPResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 200, fields: [
            Transit.HTTPField(name: "Set-Cookie", value: "a=1"),
            Transit.HTTPField(name: "Content-Type", value: "text/plain"),
            Transit.HTTPField(name: "set-cookie", value: "b=2"),
        ])
        let response = try FieldConversion.response(head)
        #expect(response.status.code == 200)
        #expect(response.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(response.headerFields.map(\.name.rawName) == ["Set-Cookie", "Content-Type", "set-cookie"])
    }

    @Test func statusOutsideThreeDigitsIsATypedError() {
        let head = HTTPResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 1000, fields: [])
        #expect(throws: TransitOpenAPIError.invalidStatusCode(1000)) { try FieldConversion.response(head) }
    }

    @Test(arguments: [
        ("http://127.0.0.1:8080", "/posts?userId=1", "http://127.0.0.1:8080/posts?userId=1"),
        ("http://127.0.0.1:8080/api/", "/posts", "http://127.0.0.1:8080/api/posts"),
        ("http://127.0.0.1:8080/api", "/attachments/a%20b", "http://127.0.0.1:8080/api/attachments/a%20b"),
    ])
    func urlJoinsServerAndPath(base: String, path: String, expected: String) throws {
        #expect(try FieldConversion.url(baseURL: URL(string: base)!, path: path).absoluteString == expected)
    }

    @Test func streamingIsChosenByOperationOrAcceptedTypes() {
        var configuration = TransitClientTransport.Configuration()
        configuration.streamedOperations = ["tail"]
        var json = HTTPTypes.HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/")
        json.headerFields[.accept] = "application/json"
        var binary = json
        binary.headerFields[.accept] = "application/octet-stream"
        var either = json
        either.headerFields[.accept] = "application/json, application/octet-stream"
        var events = json
        events.headerFields[.accept] = "Text/Event-Stream; q=1"
        #expect(!configuration.isStreamed(operationID: "list", request: json))
        #expect(configuration.isStreamed(operationID: "tail", request: json))
        #expect(configuration.isStreamed(operationID: "get", request: binary))
        #expect(configuration.isStreamed(operationID: "get", request: either))
        #expect(configuration.isStreamed(operationID: "events", request: events))
    }
}

@Suite struct StreamedResponseTests {
    @Test func chunksArriveInOrderThenTheEnd() async throws {
        let parts = ManualParts()
        let ended = Mutex(0)
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: { ended.withLock { $0 += 1 } })
        parts.send(.value(.head(head)))
        #expect(try await response.head().statusCode == 200)
        parts.send(.value(.body(Data([1, 2, 3]))))
        parts.send(.value(.body(Data([4]))))
        parts.send(.finished)
        #expect(try await response.next() == Data([1, 2, 3]))
        #expect(try await response.next() == Data([4]))
        #expect(try await response.next() == nil)
        #expect(ended.withLock { $0 } == 1)
    }

    @Test func aReaderFallingBehindFailsTheBodyAndCancelsTheTransfer() async throws {
        let parts = ManualParts()
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: {})
        parts.send(.value(.head(head)))
        _ = try await response.head()
        parts.send(.value(.body(Data(count: 6))))
        parts.send(.value(.body(Data(count: 6))))
        await #expect(throws: TransitOpenAPIError.consumerFellBehind(bufferLimit: 10)) { try await response.next() }
        #expect(parts.isCancelled)
    }

    @Test func aReaderThatKeepsUpIsNeverCutOff() async throws {
        let parts = ManualParts()
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: {})
        parts.send(.value(.head(head)))
        _ = try await response.head()
        var received = 0
        for _ in 0..<100 {
            parts.send(.value(.body(Data(count: 8))))
            received += try await response.next()?.count ?? 0
        }
        parts.send(.finished)
        #expect(try await response.next() == nil)
        #expect(received == 800)
    }

    @Test func aFailureReachesTheReader() async throws {
        let parts = ManualParts()
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: {})
        parts.send(.value(.head(head)))
        _ = try await response.head()
        parts.send(.failed(URLError(.networkConnectionLost)))
        await #expect(throws: URLError.self) { try await response.next() }
    }

    @Test func anEndBeforeTheHeadIsATypedError() async throws {
        let parts = ManualParts()
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: {})
        parts.send(.finished)
        await #expect(throws: TransitOpenAPIError.missingResponseHead) { try await response.head() }
    }

    @Test func releasingTheBodyUnreadCancelsTheTransferAndEndsIt() async throws {
        let parts = ManualParts()
        let ended = Mutex(0)
        var response: StreamedResponse? = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: { ended.withLock { $0 += 1 } })
        parts.send(.value(.head(head)))
        _ = try await response?.head()
        response = nil
        #expect(parts.isCancelled)
        #expect(ended.withLock { $0 } == 1)
    }

    @Test func cancellingTheReadingTaskCancelsTheTransfer() async throws {
        let parts = ManualParts()
        let response = StreamedResponse(parts.signal, bufferLimit: 10, onEnd: {})
        parts.send(.value(.head(head)))
        _ = try await response.head()
        let reader = Task { try await response.next() }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(parts.isCancelled)
    }
}

@Suite struct HeldBodyTests {
    @Test func aSmallBodyOfKnownLengthIsHeldInMemory() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let held = try await HeldBody.hold(HTTPBody(Data([1, 2, 3])), inMemoryUpTo: 10, maxBytes: 100, directory: folder)
        guard case .data(let data) = held else { Issue.record("expected data, got \(held)"); return }
        #expect(data == Data([1, 2, 3]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test func aSinglePassBodyOfUnknownLengthGoesToAFileRemovedAfterwards() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        continuation.yield([1, 2])
        continuation.yield([3])
        continuation.finish()
        let body = HTTPBody(stream, length: .unknown)
        #expect(body.iterationBehavior == .single)
        let held = try await HeldBody.hold(body, inMemoryUpTo: 10, maxBytes: 100, directory: folder)
        guard case .file(let file) = held else { Issue.record("expected a file, got \(held)"); return }
        #expect(try Data(contentsOf: file.url) == Data([1, 2, 3]))
        held.remove()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test func aStreamedBodyPastTheLimitFailsAndLeavesNothing() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        continuation.yield(ArraySlice(repeating: 0, count: 60))
        continuation.yield(ArraySlice(repeating: 0, count: 60))
        continuation.finish()
        await #expect(throws: TransitOpenAPIError.requestBodyTooLarge(limit: 100)) {
            try await HeldBody.hold(HTTPBody(stream, length: .unknown), inMemoryUpTo: 10, maxBytes: 100, directory: folder)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test func aDeclaredLengthPastTheLimitFailsWithoutReading() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        await #expect(throws: TransitOpenAPIError.requestBodyTooLarge(limit: 100)) {
            try await HeldBody.hold(HTTPBody(Data(count: 200)), inMemoryUpTo: 10, maxBytes: 100, directory: folder)
        }
    }
}
