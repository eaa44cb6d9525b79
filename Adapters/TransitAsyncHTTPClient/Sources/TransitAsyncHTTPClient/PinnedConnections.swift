import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// The HTTP/1.1 connections of the transport's own SwiftNIO path (the one that carries requests
/// to hosts whose server-trust rule has pins), and the pool that keeps the idle ones.
///
/// A connection is opened per exchange unless an idle one of the same key (scheme, host, port
/// and rule) is in the pool. After a response that was read to its end, with neither side asking
/// for `Connection: close` and the request sent completely, the connection goes back to the pool:
/// at most ``maxIdlePerKey`` per key (a further one is closed), each closed after ``idleTime``
/// unused, or when the server closes it. ``shutdown()`` closes every connection, idle or busy.
///
/// Thread safety: the pool's state is behind one lock, never held while a channel is closed or a
/// promise completed.
final class PinnedConnections: Sendable {
    /// What a pooled connection may be reused for.
    struct Key: Hashable, Sendable {
        /// `true` for https.
        let isTLS: Bool
        /// The host as the URL names it (brackets of an IPv6 literal removed), lower case.
        let host: String
        let port: Int
        /// The host of the server-trust rule whose pins the connection was verified against;
        /// `nil` for none.
        let rule: String?
    }

    /// How a connection's TLS is set up: its context, and the verifier of a pinned rule.
    struct TLS: Sendable {
        let context: NIOSSLContext
        let verifier: PinVerifier?
    }

    /// The most idle connections kept per key.
    static let maxIdlePerKey = 8
    /// How long an idle connection is kept.
    static let idleTime: TimeAmount = .seconds(60)

    private struct Idle {
        let connection: PinnedConnection
        let expiry: Scheduled<Void>
    }

    private struct State {
        var idle: [Key: [Idle]] = [:]
        /// Every open connection, idle or busy, for shutdown.
        var open: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false
        /// Connections opened so far.
        var opened = 0
    }

    private let state = NIOLockedValueBox(State())
    let eventLoopGroup: any EventLoopGroup
    private let connectTimeout: TimeAmount

    init(eventLoopGroup: any EventLoopGroup, connectTimeout: TimeAmount) {
        self.eventLoopGroup = eventLoopGroup
        self.connectTimeout = connectTimeout
    }

    /// Whether ``shutdown()`` was called.
    var isShutDown: Bool {
        state.withLockedValue { $0.isShutDown }
    }

    /// The number of open connections (for tests).
    var openCount: Int {
        state.withLockedValue { $0.open.count }
    }

    /// The number of connections opened so far (for tests).
    var openedCount: Int {
        state.withLockedValue { $0.opened }
    }

    /// An idle connection of `key` that is still open, taken out of the pool; `nil` for none.
    func lease(_ key: Key) -> PinnedConnection? {
        while true {
            let taken = state.withLockedValue { state -> Idle? in
                guard !state.isShutDown else { return nil }
                return state.idle[key]?.popLast()
            }
            guard let taken else { return nil }
            taken.expiry.cancel()
            if taken.connection.channel.isActive { return taken.connection }
        }
    }

    /// Puts `connection` back into the pool, or closes it when the pool of its key is full or shut
    /// down.
    func release(_ connection: PinnedConnection) {
        let channel = connection.channel
        let id = ObjectIdentifier(channel)
        let expiry = channel.eventLoop.scheduleTask(in: Self.idleTime) { [weak self] () -> Void in
            guard let self else { return }
            self.expire(connection)
        }
        let kept = state.withLockedValue { state -> Bool in
            guard !state.isShutDown, state.open[id] != nil, (state.idle[connection.key]?.count ?? 0) < Self.maxIdlePerKey else { return false }
            state.idle[connection.key, default: []].append(Idle(connection: connection, expiry: expiry))
            return true
        }
        if !kept {
            expiry.cancel()
            channel.close(promise: nil)
        }
    }

    /// Closes an idle connection that stayed unused for ``idleTime``.
    private func expire(_ connection: PinnedConnection) {
        let removed = state.withLockedValue { state -> Bool in
            guard let index = state.idle[connection.key]?.firstIndex(where: { $0.connection === connection }) else { return false }
            state.idle[connection.key]?.remove(at: index)
            return true
        }
        if removed { connection.channel.close(promise: nil) }
    }

    /// Forgets a connection that closed.
    private func closed(_ connection: PinnedConnection) {
        let expiry = state.withLockedValue { state -> Scheduled<Void>? in
            state.open.removeValue(forKey: ObjectIdentifier(connection.channel))
            guard let index = state.idle[connection.key]?.firstIndex(where: { $0.connection === connection }) else { return nil }
            return state.idle[connection.key]?.remove(at: index).expiry
        }
        expiry?.cancel()
    }

    /// Opens a connection for `key`: connected, and for TLS with its handshake complete (and so
    /// its chain verified). Fails with ``PinFailure`` when a pinned rule's verification failed.
    func connect(_ key: Key, tls: TLS?) -> EventLoopFuture<PinnedConnection> {
        let loop = eventLoopGroup.next()
        guard !isShutDown else { return loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        let verdict = NIOLockedValueBox<PinVerifier.Verdict?>(nil)
        let ready = loop.makePromise(of: Void.self)
        let isAddress = (try? SocketAddress(ipAddress: key.host, port: key.port)) != nil
        return ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        // Server Name Indication names hosts, never addresses.
                        let name = isAddress ? nil : key.host
                        if let verifier = tls.verifier {
                            let host = key.host
                            try pipeline.addHandler(NIOSSLClientHandler(context: tls.context, serverHostname: name) { presented, promise in
                                // The chain is validated off the event loop; the handshake waits.
                                Task {
                                    let result = await verifier.verify(presented, host: host)
                                    verdict.withLockedValue { $0 = result }
                                    promise.succeed(result == .trusted ? .certificateVerified : .failed)
                                }
                            })
                        } else {
                            try pipeline.addHandler(NIOSSLClientHandler(context: tls.context, serverHostname: name))
                        }
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(PinnedConnectionHandler(ready: ready, isTLS: tls != nil))
                }
            }
            .connect(host: key.host, port: key.port)
            .flatMap { channel in
                let connection = PinnedConnection(channel: channel, key: key)
                let admitted = self.state.withLockedValue { state -> Bool in
                    guard !state.isShutDown else { return false }
                    state.open[ObjectIdentifier(channel)] = channel
                    state.opened += 1
                    return true
                }
                channel.closeFuture.whenComplete { [weak self] _ in self?.closed(connection) }
                guard admitted else {
                    channel.close(promise: nil)
                    return loop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return ready.futureResult.map { connection }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    if let verdict = verdict.withLockedValue({ $0 }), verdict != .trusted {
                        throw PinFailure(verdict: verdict, underlying: error)
                    }
                    throw error
                }
            }
            .flatMapErrorThrowing { error in
                // A connect that failed never reached the pipeline's handler.
                ready.fail(error)
                throw error
            }
    }

    /// Closes every connection, idle or busy; later ``connect(_:tls:)`` calls fail.
    func shutdown() -> EventLoopFuture<Void> {
        let (channels, idle) = state.withLockedValue { state -> ([any Channel], [Idle]) in
            state.isShutDown = true
            defer { state.idle = [:] }
            return (Array(state.open.values), state.idle.values.flatMap { $0 })
        }
        for entry in idle { entry.expiry.cancel() }
        let closes = channels.map { channel in channel.close().recover { _ in } }
        return EventLoopFuture.andAllComplete(closes, on: eventLoopGroup.next())
    }
}

/// A handshake that failed because a pinned rule's verification refused the chain.
struct PinFailure: Error {
    let verdict: PinVerifier.Verdict
    let underlying: any Error
}

/// One connection of the pinned path: its channel and the handler that hands its response parts
/// to the exchange using it.
final class PinnedConnection: Sendable {
    let channel: any Channel
    let key: PinnedConnections.Key

    init(channel: any Channel, key: PinnedConnections.Key) {
        self.channel = channel
        self.key = key
    }

    /// Makes `exchange` (or nobody) the receiver of the connection's events. On the event loop.
    func attach(_ exchange: PinnedExchange?) {
        channel.eventLoop.preconditionInEventLoop()
        if let handler = try? channel.pipeline.syncOperations.handler(type: PinnedConnectionHandler.self) {
            handler.exchange = exchange
        }
    }
}

/// The last handler of a pinned-path connection: completes the connection's readiness (connected;
/// for TLS, handshake complete) and hands response parts, errors and the close to the exchange
/// using the connection. Confined to the channel's event loop.
final class PinnedConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private var ready: EventLoopPromise<Void>?
    private let isTLS: Bool
    /// The exchange using the connection, if any.
    var exchange: PinnedExchange?

    init(ready: EventLoopPromise<Void>, isTLS: Bool) {
        self.ready = ready
        self.isTLS = isTLS
    }

    private func succeedReady() {
        ready?.succeed()
        ready = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if !isTLS { succeedReady() }
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if !isTLS, context.channel.isActive { succeedReady() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent { succeedReady() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else {
            // Bytes on an idle connection answer no request: the connection is not reusable.
            context.close(promise: nil)
            return
        }
        exchange.receive(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready?.fail(error)
        ready = nil
        let exchange = exchange
        self.exchange = nil
        exchange?.connectionFailed(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready?.fail(ChannelError.eof)
        ready = nil
        let exchange = exchange
        self.exchange = nil
        exchange?.connectionFailed(nil)
        context.fireChannelInactive()
    }
}
