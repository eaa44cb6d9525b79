import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A raw TCP server on 127.0.0.1 (an ephemeral port) that answers each request as a script says,
/// byte for byte: keep-alive answers that close at once, a `101` followed by a flood, silence.
///
/// ```swift
/// let server = try HostileServer { request in .reply(HostileServer.ok("one"), thenClose: true) }
/// defer { server.stop() }
/// ```
///
/// A request is a head ending in an empty line (bodies are not read: the scripts answer GETs).
/// The server counts the connections it accepted, those open now and the most open at once, and
/// records each request's path in the order the requests arrived.
final class HostileServer: Sendable {
    /// One request as the script sees it.
    struct Request: Sendable {
        /// The request's path.
        let path: String
        /// Which request of its connection it is (0 for the first).
        let indexOnConnection: Int
        /// Which request of the server it is (0 for the first).
        let index: Int
    }

    /// What the server does with a request.
    enum Action: Sendable {
        /// Writes `bytes`; then closes the connection when `thenClose` is set.
        case reply(String, thenClose: Bool)
        /// Writes `bytes`, then `prefix` and `flood` bytes more (`x`) in 64 KiB pieces, each
        /// written when the previous one was (the client's reading paces it); the connection
        /// stays open.
        case replyThenFlood(String, prefix: String = "", flood: Int)
        /// Answers nothing, and keeps the connection open.
        case silence
        /// Waits until ``HostileServer/releaseHeld()`` and then writes `bytes` (keep-alive).
        case held(String)
    }

    private struct Counts {
        var accepted = 0
        var open = 0
        var peakOpen = 0
        var requests = 0
        var paths: [String] = []
        var held: [@Sendable () -> Void] = []
        var releasing = false
    }

    private let channel: any Channel
    private let counts: NIOLockedValueBox<Counts>

    /// Starts the server; `script` decides each request's fate. With `readsNothing` set the
    /// server reads nothing at all: a TLS client's handshake never gets an answer.
    init(readsNothing: Bool = false, script: @escaping @Sendable (Request) -> Action) throws {
        let counts = NIOLockedValueBox(Counts())
        self.counts = counts
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelInitializer { channel in
                counts.withLockedValue { counts in
                    counts.accepted += 1
                    counts.open += 1
                    counts.peakOpen = max(counts.peakOpen, counts.open)
                }
                channel.closeFuture.whenComplete { _ in counts.withLockedValue { $0.open -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    if !readsNothing {
                        try channel.pipeline.syncOperations.addHandler(Connection(counts: counts, script: script))
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
    }

    /// A `200` with `body`, `Content-Length` framed, kept alive.
    static func ok(_ body: String, headers: String = "") -> String {
        "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)"
    }

    /// The port the server listens on.
    var port: Int { channel.localAddress?.port ?? 0 }

    /// `http://127.0.0.1:PORT` followed by `path` (`https` with `secure`).
    func url(_ path: String = "/", secure: Bool = false) -> URL {
        URL(string: "\(secure ? "https" : "http")://127.0.0.1:\(port)\(path)")!
    }

    /// The connections accepted so far.
    var acceptedCount: Int { counts.withLockedValue { $0.accepted } }
    /// The connections open now.
    var openCount: Int { counts.withLockedValue { $0.open } }
    /// The most connections open at once.
    var peakOpenCount: Int { counts.withLockedValue { $0.peakOpen } }
    /// The paths of the requests, in the order they arrived.
    var paths: [String] { counts.withLockedValue { $0.paths } }
    /// The requests waiting in ``Action/held(_:)``.
    var heldCount: Int { counts.withLockedValue { $0.held.count } }

    /// Answers every held request, and every later one that would be held, at once.
    func releaseHeld() {
        let held = counts.withLockedValue { counts -> [@Sendable () -> Void] in
            counts.releasing = true
            defer { counts.held = [] }
            return counts.held
        }
        for answer in held { answer() }
    }

    /// Answers the request held longest (others stay held).
    func releaseOneHeld() {
        let first = counts.withLockedValue { counts -> (@Sendable () -> Void)? in
            counts.held.isEmpty ? nil : counts.held.removeFirst()
        }
        first?()
    }

    /// Waits until `condition` holds, polling, for at most `timeout`; whether it held.
    func waitUntil(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Stops listening (connections in flight end by themselves).
    func stop() {
        try? channel.close().wait()
    }

    private final class Connection: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let counts: NIOLockedValueBox<Counts>
        let script: @Sendable (Request) -> Action
        var received = ""
        var onConnection = 0

        init(counts: NIOLockedValueBox<Counts>, script: @escaping @Sendable (Request) -> Action) {
            self.counts = counts
            self.script = script
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received += buffer.readString(length: buffer.readableBytes) ?? ""
            while let end = received.range(of: "\r\n\r\n") {
                let head = String(received[..<end.lowerBound])
                received = String(received[end.upperBound...])
                let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                let index = counts.withLockedValue { counts -> Int in
                    counts.paths.append(path)
                    counts.requests += 1
                    return counts.requests - 1
                }
                let request = Request(path: path, indexOnConnection: onConnection, index: index)
                onConnection += 1
                act(script(request), context: context)
            }
        }

        private func act(_ action: Action, context: ChannelHandlerContext) {
            switch action {
            case .reply(let text, let thenClose):
                let written = context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)))
                if thenClose { context.close(promise: nil) } else { _ = written }
            case .replyThenFlood(let text, let prefix, let flood):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text + prefix)), promise: nil)
                Self.flood(context.channel, remaining: flood)
            case .silence:
                break
            case .held(let text):
                let channel = context.channel
                let answer: @Sendable () -> Void = { channel.writeAndFlush(ByteBuffer(string: text), promise: nil) }
                let now = counts.withLockedValue { counts -> Bool in
                    if counts.releasing { return true }
                    counts.held.append(answer)
                    return false
                }
                if now { answer() }
            }
        }

        private static func flood(_ channel: any Channel, remaining: Int) {
            guard remaining > 0, channel.isActive else { return }
            let piece = min(remaining, 64 * 1024)
            channel.writeAndFlush(ByteBuffer(repeating: UInt8(ascii: "x"), count: piece)).whenSuccess {
                flood(channel, remaining: remaining - piece)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
