import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitTesting

/// `LoopbackResponse.ranged`: the byte-range server resumable downloads are tested against.
@Suite("LoopbackServer serves byte ranges")
struct LoopbackRangeTests {
    static let representation = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) })

    private func fetch(range: String?, ifRange: String? = nil) async throws -> (HTTPResponse, sent: Int) {
        try await withLoopbackServer(handler: { request in
            .ranged(Self.representation, for: request, etag: "\"v1\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT")
        }) { server in
            var request = URLRequest(url: server.url("/r"))
            if let range { request.setValue(range, forHTTPHeaderField: "Range") }
            if let ifRange { request.setValue(ifRange, forHTTPHeaderField: "If-Range") }
            let recorder = try await sendAndWait(URLSessionTransport(configuration: .loopbackTests()), request)
            return (try #require(recorder.responses.first), server.sentBodyByteCount)
        }
    }

    @Test func anOpenRangeIsAnsweredWithTheRest() async throws {
        let (response, sent) = try await fetch(range: "bytes=400-", ifRange: "\"v1\"")
        #expect(response.statusCode == 206)
        #expect(response.value(forHTTPHeaderField: "Content-Range") == "bytes 400-999/1000")
        #expect(response.data == Self.representation.suffix(from: 400))
        #expect(sent == 600)
    }

    @Test func aClosedRangeIsAnsweredWithThoseBytes() async throws {
        let (response, _) = try await fetch(range: "bytes=10-19")
        #expect(response.statusCode == 206)
        #expect(response.data == Self.representation[10...19])
    }

    @Test func aStaleIfRangeGetsTheWholeRepresentation() async throws {
        let (response, sent) = try await fetch(range: "bytes=400-", ifRange: "\"v0\"")
        #expect(response.statusCode == 200)
        #expect(response.data == Self.representation)
        #expect(sent == 1000)
        #expect(response.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        #expect(response.value(forHTTPHeaderField: "ETag") == "\"v1\"")
    }

    @Test func theDateServesAsIfRange() async throws {
        let (response, _) = try await fetch(range: "bytes=999-", ifRange: "Tue, 15 Nov 1994 12:45:26 GMT")
        #expect(response.statusCode == 206)
        #expect(response.data == Data([UInt8(truncatingIfNeeded: 999)]))
    }

    @Test func aRangePastTheEndIs416() async throws {
        let (response, _) = try await fetch(range: "bytes=1000-")
        #expect(response.statusCode == 416)
        #expect(response.value(forHTTPHeaderField: "Content-Range") == "bytes */1000")
    }

    @Test(arguments: ["bytes=1-2,5-6", "items=0-", "bytes=-5", "bytes=abc-"])
    func anotherRangeGetsTheWholeRepresentation(_ range: String) async throws {
        let (response, _) = try await fetch(range: range)
        #expect(response.statusCode == 200, "\(range)")
        #expect(response.data == Self.representation)
    }
}
