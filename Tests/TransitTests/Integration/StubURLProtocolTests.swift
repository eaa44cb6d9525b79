import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// `StubURLProtocol` behind a real `URLSession` (through `URLSessionTransport`): canned answers,
/// recorded requests, and isolation between registries used at the same time.
@Suite("StubURLProtocol")
struct StubURLProtocolTests {
    private let url = URL(string: "https://api.example.test/posts?page=2")!

    @Test func answersWithTheCannedResponseAndRecordsTheRequest() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub(.post, path: "/posts").thenRespond(.json(#"{"id":7}"#, status: 201, headers: ["X-Trace": "t1"]))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"title":"hi"}"#.utf8)
        request.setValue("Bearer abc", forHTTPHeaderField: "Authorization")
        let recorder = try await sendAndWait(transport, request)
        let response = try #require(recorder.responses.first)
        #expect(recorder.isFinished)
        #expect(response.statusCode == 201)
        #expect(response.text == #"{"id":7}"#)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(response.value(forHTTPHeaderField: "x-trace") == "t1")
        let recorded = try #require(stubs.requests.first)
        #expect(stubs.requests.count == 1)
        #expect(recorded.url == url)
        #expect(recorded.httpMethod == "POST")
        #expect(recorded.httpBody == Data(#"{"title":"hi"}"#.utf8))
        #expect(recorded.value(forHTTPHeaderField: "Authorization") == "Bearer abc")
        stubs.clearRequests()
        #expect(stubs.requests.isEmpty)
    }

    @Test func usesAnswersInOrderAndRepeatsTheLast() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub(.get, path: "/posts")
            .thenRespond(.status(503))
            .thenRespond { request in .text("page \(request.url?.query ?? "")") }
        let transport = URLSessionTransport(configuration: stubs.configuration())
        var statuses: [Int] = []
        var texts: [String] = []
        for _ in 0..<3 {
            let recorder = try await sendAndWait(transport, URLRequest(url: url))
            statuses += recorder.responses.map(\.statusCode)
            texts += recorder.responses.compactMap(\.text)
        }
        #expect(statuses == [503, 200, 200])
        #expect(texts == ["", "page page=2", "page page=2"])
    }

    @Test func theFirstMatchingStubAnswers() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub { $0.url == URL(string: "https://api.example.test/exact")! }.thenRespond(.text("exact"))
        stubs.stub(.delete).thenRespond(.status(204))
        stubs.stub(matching: { $0.value(forHTTPHeaderField: "X-Mode") == "special" }).thenRespond(.text("special"))
        stubs.stub().thenRespond(.text("anything"))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        var delete = URLRequest(url: URL(string: "https://api.example.test/gone")!)
        delete.httpMethod = "DELETE"
        var special = URLRequest(url: URL(string: "https://other.example.test/x")!)
        special.setValue("special", forHTTPHeaderField: "X-Mode")
        let cases: [(URLRequest, String)] = [
            (URLRequest(url: URL(string: "https://api.example.test/exact")!), "exact"),
            (delete, ""),
            (special, "special"),
            (URLRequest(url: URL(string: "https://api.example.test/else")!), "anything"),
        ]
        for (request, expected) in cases {
            let recorder = try await sendAndWait(transport, request)
            #expect(recorder.responses.first?.text == expected)
        }
    }

    @Test func anUnmatchedRequestFailsClearlyAndNeverReachesTheNetwork() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub(path: "/other").thenRespond(.text("no"))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        let recorder = try await sendAndWait(transport, URLRequest(url: url))
        let error = try #require(recorder.urlError)
        #expect(error.code == .resourceUnavailable)
        #expect(error.localizedDescription.contains("GET https://api.example.test/posts?page=2"))
        #expect(stubs.requests.count == 1)
    }

    @Test func deliversABodyInThePiecesGiven() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub().thenRespond(.chunks([Data("ab".utf8), Data("cde".utf8), Data("f".utf8)]))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        let recorder = try await sendAndWait(transport, URLRequest(url: url))
        #expect(recorder.responses.first?.text == "abcdef")
        let parts = try await transport.exchange(TransportRequest(URLRequest(url: url))).collect().firstValue()
        let pieces = parts.compactMap { part -> Int? in if case .body(let chunk) = part { chunk.count } else { nil } }
        #expect(pieces == [2, 3, 1])
    }

    @Test func failuresReachTheSubscriberAsURLErrors() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub(path: "/timeout").thenRespond(.failure(URLError(.timedOut)))
        stubs.stub(path: "/cut").thenRespond(.chunks([Data("partial".utf8)], thenFail: URLError(.networkConnectionLost)))
        stubs.stub(path: "/plain").thenRespond(.nonHTTP(body: Data("x".utf8)))
        let transport = URLSessionTransport(configuration: stubs.configuration())
        let expectations: [(String, URLError.Code)] = [
            ("/timeout", .timedOut), ("/cut", .networkConnectionLost), ("/plain", .badServerResponse),
        ]
        for (path, code) in expectations {
            let recorder = try await sendAndWait(transport, URLRequest(url: URL(string: "https://api.example.test\(path)")!))
            #expect(recorder.responses.isEmpty, "\(path)")
            #expect(recorder.urlError?.code == code, "\(path): \(String(describing: recorder.error))")
        }
    }

    @Test func cancellingAPendingRequestStopsTheLoadAndDeliversNothing() async throws {
        let stubs = StubURLProtocol.Registry()
        stubs.stub().thenRespond(.pending)
        let transport = URLSessionTransport(configuration: stubs.configuration())
        let recorder = TransportRecorder()
        let token = recorder.subscribe(to: transport.send(URLRequest(url: url)))
        #expect(await eventually { stubs.requests.count == 1 })
        #expect(stubs.stoppedRequestCount == 0)
        token.cancel()
        #expect(await eventually { stubs.stoppedRequestCount == 1 })
        #expect(recorder.events.isEmpty)
        #expect(transport.activeTaskCount == 0)
    }

    @Test func concurrentRegistriesNeverSeeEachOthersStubsOrRequests() async throws {
        // Twenty registries, used at the same time, all stubbing the very same URL.
        let results = try await withThrowingTaskGroup(of: (Int, [String], Int).self) { group in
            for index in 0..<20 {
                group.addTask { [url] in
                    let stubs = StubURLProtocol.Registry()
                    stubs.stub().thenRespond(.text("registry \(index)"))
                    let transport = URLSessionTransport(configuration: stubs.configuration())
                    var texts: [String] = []
                    for _ in 0..<3 {
                        let recorder = try await sendAndWait(transport, URLRequest(url: url))
                        texts += recorder.responses.compactMap(\.text)
                    }
                    return (index, texts, stubs.requests.count)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 20)
        for (index, texts, requestCount) in results {
            #expect(texts == Array(repeating: "registry \(index)", count: 3))
            #expect(requestCount == 3)
        }
    }

    @Test func everyRegistryHasItsOwnProtocolClass() {
        let first = StubURLProtocol.Registry()
        let second = StubURLProtocol.Registry()
        #expect(ObjectIdentifier(first.protocolClass) != ObjectIdentifier(second.protocolClass))
        #expect(first.protocolClass is StubURLProtocol.Type)
        let configuration = first.configuration()
        #expect(configuration.protocolClasses?.first.map(ObjectIdentifier.init) == ObjectIdentifier(first.protocolClass))
    }

    @Test func aSessionWithoutALiveRegistryIsAnsweredWithAnError() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubURLProtocol.self]
        let unbound = try await sendAndWait(URLSessionTransport(configuration: configuration), URLRequest(url: url))
        #expect(unbound.urlError?.code == .resourceUnavailable)
        #expect(unbound.urlError?.localizedDescription.contains("no StubURLProtocol.Registry") == true)

        var stubs: StubURLProtocol.Registry? = StubURLProtocol.Registry()
        stubs!.stub().thenRespond(.text("alive"))
        let transport = URLSessionTransport(configuration: stubs!.configuration())
        stubs = nil
        let orphan = try await sendAndWait(transport, URLRequest(url: url))
        #expect(orphan.urlError?.code == .resourceUnavailable)
    }
}
