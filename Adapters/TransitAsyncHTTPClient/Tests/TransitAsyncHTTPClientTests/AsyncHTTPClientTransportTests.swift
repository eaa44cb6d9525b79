import AsyncHTTPClient
import Foundation
import InMemoryTracing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Signals
import Testing
import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// What `AsyncHTTPClientTransport` does beyond the conformance suite: its error table, its header
/// folding, the requests it refuses, its configuration and its lifetime.
@Suite("AsyncHTTPClientTransport")
struct AsyncHTTPClientTransportTests {
    // MARK: Configuration

    /// AsyncHTTPClient's default tracer is a no-op one for which every request still builds a
    /// span; without a tracer bootstrapped, the transport's configuration has none.
    @Test func theDefaultConfigurationBuildsNoSpanForANoOpTracer() {
        #expect(AsyncHTTPClient.HTTPClient.Configuration().tracing.tracer != nil)
        #expect(AsyncHTTPClientTransport.defaultConfiguration.tracing.tracer == nil)
    }

    /// AsyncHTTPClient's own span (no parent, no trace header written on this path) is left out
    /// unless the transport is asked for it, whatever tracer the configuration carries: the span
    /// of an attempt is the one a Transit monitor makes.
    @Test func asyncHTTPClientsOwnSpanOnlyWhenAskedFor() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        for asked in [false, true] {
            let tracer = InMemoryTracer()
            var configuration = AsyncHTTPClientTransport.defaultConfiguration
            configuration.tracing.tracer = tracer
            let transport = AsyncHTTPClientTransport(configuration: configuration, asyncHTTPClientTracing: asked)
            server.enqueue(.text("traced"))
            let response = try await transport.send(URLRequest(url: server.url("/traced"))).firstValue()
            try await transport.shutdown()
            #expect(response.text == "traced")
            #expect(tracer.finishedSpans.count + tracer.activeSpans.count == (asked ? 1 : 0), "asked: \(asked)")
        }
    }

    // MARK: Errors

    @Test(arguments: [
        (AsyncHTTPClient.HTTPClientError.remoteConnectionClosed, URLError.Code.networkConnectionLost),
        (.connectTimeout, .timedOut),
        (.readTimeout, .timedOut),
        (.writeTimeout, .timedOut),
        (.deadlineExceeded, .timedOut),
        (.getConnectionFromPoolTimeout, .timedOut),
        (.tlsHandshakeTimeout, .timedOut),
        (.cancelled, .cancelled),
        (.alreadyShutdown, .cancelled),
        (.invalidURL, .badURL),
        (.emptyHost, .badURL),
        (.emptyScheme, .badURL),
        (.bodyLengthMismatch, .unknown),
    ])
    func mapsAsyncHTTPClientErrors(error: AsyncHTTPClient.HTTPClientError, code: URLError.Code) {
        let mapped = ErrorMapping.urlError(error)
        #expect(mapped.code == code)
        #expect((mapped.userInfo[NSUnderlyingErrorKey] as? AsyncHTTPClient.HTTPClientError) == error)
    }

    @Test func mapsNIOErrors() {
        let cases: [(any Error, URLError.Code)] = [
            (HTTPParserError.invalidEOFState, .networkConnectionLost),
            (HTTPParserError.invalidStatus, .cannotParseResponse),
            (HTTPParserError.invalidConstant, .cannotParseResponse),
            (IOError(errnoCode: ECONNREFUSED, reason: "connect"), .cannotConnectToHost),
            (IOError(errnoCode: ECONNRESET, reason: "read"), .networkConnectionLost),
            (IOError(errnoCode: EPIPE, reason: "write"), .networkConnectionLost),
            (IOError(errnoCode: ETIMEDOUT, reason: "read"), .timedOut),
            (ChannelError.connectTimeout(.seconds(1)), .timedOut),
            (ChannelError.eof, .networkConnectionLost),
            (ChannelError.ioOnClosedChannel, .networkConnectionLost),
            (NIOSSLError.handshakeFailed(.sslError([])), .secureConnectionFailed),
            (NIOSSLExtraError.failedToValidateHostname, .serverCertificateUntrusted),
            (NIOSSLExtraError.invalidSNIHostname, .secureConnectionFailed),
            (SocketAddressError.unsupported, .cannotFindHost),
            (CancellationError(), .unknown),
        ]
        for (error, code) in cases {
            #expect(ErrorMapping.urlError(error).code == code, "\(error)")
        }
        let own = URLError(.timedOut)
        #expect(ErrorMapping.urlError(own) == own)
    }

    // MARK: Headers

    @Test func keepsRepeatedHeaderFieldsInOrder() throws {
        let headers = HTTPHeaders([
            ("Set-Cookie", "a=1"), ("Content-Type", "text/plain"), ("set-cookie", "b=2"),
            ("SET-COOKIE", "c=3"), ("X-One", "1"), ("X-1", "x"),
        ])
        let fields = ExchangeDelegate.fields(headers)
        #expect(fields.map(\.name) == ["Set-Cookie", "Content-Type", "set-cookie", "SET-COOKIE", "X-One", "X-1"])
        #expect(fields.map(\.value) == ["a=1", "text/plain", "b=2", "c=3", "1", "x"])
        let head = Transit.HTTPResponseHead(url: try #require(URL(string: "http://127.0.0.1/")), statusCode: 200, fields: fields)
        #expect(head.values(forHTTPHeaderField: "set-cookie") == ["a=1", "b=2", "c=3"])
        #expect(head.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2, c=3")
        #expect(head.allHeaderFields == ["Set-Cookie": "a=1, b=2, c=3", "Content-Type": "text/plain", "X-One": "1", "X-1": "x"])
    }

    @Test func recognisesContentEncodingInAnyCaseAndNothingElse() {
        for name in ["Content-Encoding", "content-encoding", "CONTENT-ENCODING", "cOnTeNt-EnCoDiNg"] {
            #expect(ExchangeDelegate.isContentEncoding(name), "\(name)")
        }
        for name in ["Content-Length", "Content-Encodings", "Content-Encodin", "Content_Encoding", "Content\rEncoding", "Content-Encodinh", "", "Content-Éncoding"] {
            #expect(!ExchangeDelegate.isContentEncoding(name), "\(name)")
        }
    }

    // MARK: Refused requests

    @Test func refusesWhatItCannotSendWithAClearError() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        let ftp = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: URL(string: "ftp://127.0.0.1/file")!))))
        #expect(ftp.code == .unsupportedURL)

        var streamed = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
        streamed.httpMethod = "POST"
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))
        let stream = try await failure(of: transport.exchange(TransportRequest(streamed)))
        #expect(stream.code == .unsupportedURL)
        #expect(stream.localizedDescription.contains("httpBodyStream"))

        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("transit-missing-\(UUID().uuidString)")
        let file = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: URL(string: "http://127.0.0.1:9/")!), bodyFile: missing)))
        #expect(file.code == .fileDoesNotExist)
    }

    @Test func aRequestAsyncHTTPClientRefusesWhileTakingItFailsAtOnce() async throws {
        // AsyncHTTPClient refuses these inside `execute`, telling the delegate before `execute`
        // returns: the exchange ends there, once, and nothing is sent (port 9 would refuse it).
        let transport = AsyncHTTPClientTransport()
        defer { Task { try await transport.shutdown() } }
        var trace = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
        trace.httpMethod = "TRACE"
        trace.httpBody = Data("body".utf8)
        let withBody = try await failure(of: transport.exchange(TransportRequest(trace)))
        #expect(withBody.code == .unknown)
        #expect((withBody.userInfo[NSUnderlyingErrorKey] as? AsyncHTTPClient.HTTPClientError) == .traceRequestWithBody)

        var badName = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
        badName.setValue("1", forHTTPHeaderField: "X Bad")
        let withoutBody = try await failure(of: transport.exchange(TransportRequest(badName)))
        #expect(withoutBody.code == .unknown)
        #expect(withoutBody.userInfo[NSUnderlyingErrorKey] is AsyncHTTPClient.HTTPClientError, "\(withoutBody)")
    }

    // MARK: Configuration and lifetime

    @Test func followsNoRedirectWhateverTheConfigurationSays() async throws {
        var configuration = AsyncHTTPClient.HTTPClient.Configuration()
        configuration.redirectConfiguration = .follow(max: 5, allowCycles: false)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        server.enqueue(.status(302, headers: ["Location": "/elsewhere"]))
        let response = try await transport.send(URLRequest(url: server.url("/start"))).firstValue()
        #expect(response.statusCode == 302)
        #expect(server.requests.map(\.path) == ["/start"])
        try await transport.shutdown()
    }

    @Test func aShutDownTransportFailsRequestsAsCancelled() async throws {
        let transport = AsyncHTTPClientTransport()
        try await transport.shutdown()
        try await transport.shutdown() // again: nothing happens
        let error = try await failure(of: transport.exchange(TransportRequest(URLRequest(url: URL(string: "http://127.0.0.1:9/")!))))
        #expect(error.code == .cancelled)
    }

    @Test func aReleasedTransportIsFreedOnceItsRequestsEnd() async throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        let hold = LoopbackGate()
        server.enqueue(.scripted([.wait(hold), .head]))
        weak var weakTransport: AsyncHTTPClientTransport?
        let task: Task<HTTPResponse, any Error>
        do {
            let transport = AsyncHTTPClientTransport()
            weakTransport = transport
            let signal = transport.send(URLRequest(url: server.url("/held")))
            task = Task { try await signal.firstValue() }
        }
        #expect(await hold.waitUntilReached())
        // The request in flight keeps its transport.
        #expect(weakTransport != nil)
        hold.open()
        #expect(try await task.value.statusCode == 200)
        let released = await eventually { weakTransport == nil }
        #expect(released)
    }
}

/// Subscribes to `signal` and returns the `URLError` it fails with.
func failure(of signal: Signal<HTTPResponsePart, any Error>, sourceLocation: SourceLocation = #_sourceLocation) async throws -> URLError {
    do {
        for try await _ in signal.values {}
    } catch let error as URLError {
        return error
    }
    Issue.record("the exchange did not fail", sourceLocation: sourceLocation)
    return URLError(.unknown)
}

/// Re-checks `condition` until it holds or `timeout` (real time) passes, for conditions nothing
/// signals (an object released on another thread).
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
