import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An HTTPS server on 127.0.0.1 (an ephemeral port) that presents a given identity: each request
/// is answered `200` with the body `"secure"` and the connection closed.
///
/// ```swift
/// let server = try TLSTestServer(identity: certificates.identity(.expired))
/// defer { server.stop() }
/// let url = server.url("/path")   // https://127.0.0.1:PORT/path
/// ```
///
/// It runs on NIO's shared event loops; ``stop()`` closes the listening socket and waits for it.
/// ``requestCount`` tells how many requests got through the handshake to the server,
/// ``connectionCount`` how many connections it accepted, ``closedConnectionCount`` how many of them
/// have closed.
final class TLSTestServer: Sendable {
    /// The body of every answer.
    static let body = "secure"

    /// How the server answers.
    enum Answer: Sendable {
        /// `200` with ``TLSTestServer/body``, then the connection is closed.
        case close
        /// `200` with ``TLSTestServer/body``, the connection kept open for the next request.
        case keepAlive
        /// `200` with a chunked body of which `first` bytes are sent at once; the rest never
        /// comes (the connection stays open until the client closes it).
        case stream(first: Int)
    }

    private let channel: any Channel
    private let counter: RequestCounter
    private let connections: RequestCounter
    private let closedConnections: RequestCounter

    /// Starts a server presenting `identity`; `configure` may change its TLS configuration
    /// (versions, ciphers, client certificates) first. With a `redirect`, every answer is a `302`
    /// to it instead of the `200`.
    init(
        identity: TestCertificates.Identity,
        redirect: String? = nil,
        answer: Answer = .close,
        configure: (inout TLSConfiguration) -> Void = { _ in }
    ) throws {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) },
            privateKey: .privateKey(identity.key)
        )
        configure(&tls)
        let context = try NIOSSLContext(configuration: tls)
        let counter = RequestCounter()
        let connections = RequestCounter()
        let closedConnections = RequestCounter()
        self.counter = counter
        self.connections = connections
        self.closedConnections = closedConnections
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connections.increment()
                channel.closeFuture.whenComplete { _ in closedConnections.increment() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    if case .stream = answer {
                        // The response never ends: reads go on (no pipelining assistance, which
                        // stops reading until a response ends), so the client's close is seen.
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
                    } else {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: false)
                    }
                    try channel.pipeline.syncOperations.addHandler(Responder(counter: counter, redirect: redirect, answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
    }

    /// The port the server listens on.
    var port: Int {
        channel.localAddress?.port ?? 0
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    func url(_ path: String = "/", host: String = "127.0.0.1") -> URL {
        URL(string: "https://\(host):\(port)\(path)")!
    }

    /// The requests the server answered.
    var requestCount: Int {
        counter.count
    }

    /// The connections the server accepted (whether or not their handshake succeeded).
    var connectionCount: Int {
        connections.count
    }

    /// The accepted connections that have closed since.
    var closedConnectionCount: Int {
        closedConnections.count
    }

    /// Waits until `condition` holds, polling, for at most `timeout`; whether it held.
    func waitUntil(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Stops listening (connections in flight end by themselves).
    func stop() {
        try? channel.close().wait()
    }

    private final class RequestCounter: Sendable {
        private let value = NIOLockedValueBox(0)
        var count: Int { value.withLockedValue { $0 } }
        func increment() { value.withLockedValue { $0 += 1 } }
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let counter: RequestCounter
        let redirect: String?
        let answer: Answer

        init(counter: RequestCounter, redirect: String?, answer: Answer) {
            self.counter = counter
            self.redirect = redirect
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            counter.increment()
            var headers = HTTPHeaders()
            switch answer {
            case .keepAlive:
                headers.add(name: "Content-Length", value: "\(TLSTestServer.body.utf8.count)")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: TLSTestServer.body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            case .stream(let first):
                headers.add(name: "Transfer-Encoding", value: "chunked")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(repeating: UInt8(ascii: "x"), count: first)))), promise: nil)
                return
            case .close:
                break
            }
            headers.add(name: "Content-Length", value: "\(TLSTestServer.body.utf8.count)")
            headers.add(name: "Connection", value: "close")
            if let redirect { headers.add(name: "Location", value: redirect) }
            let status: HTTPResponseStatus = redirect == nil ? .ok : .found
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: TLSTestServer.body)))), promise: nil)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A client that refused the certificate ends the handshake: nothing to answer.
            context.close(promise: nil)
        }
    }
}
