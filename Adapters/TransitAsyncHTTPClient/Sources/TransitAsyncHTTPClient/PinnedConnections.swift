import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// The HTTP/1.1 connections of the transport's own SwiftNIO path (the one that carries requests
/// to hosts whose server-trust rule has pins): a pool per key (scheme, host, port and rule) held
/// to the standard of AsyncHTTPClient's own pool.
///
/// - **A limit per key** (``limit``, the configuration's
///   `connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit`, 8 by default): connections open
///   or being opened never exceed it. A request that finds none idle and no room waits in a
///   first-come-first-served queue; a released connection, or the room a closed one leaves, goes
///   to the request that waited longest. A request cancelled while it waits leaves the queue.
/// - **Connect and handshake timeouts**: the TCP connection must be established within the
///   configuration's connect timeout, and the TLS handshake (with the pin check) must complete
///   within the same time after it; otherwise the attempt fails with `.timedOut` and its socket is
///   closed. A request that ends (fails, times out or is cancelled) while its connection is being
///   opened closes that socket at once.
/// - **Only clean connections are pooled**: the exchange releases a connection only after a
///   complete ordinary response (see ``PinnedExchange``); every other ending closes it.
/// - **Nothing is buffered on an idle connection**: an idle connection that receives a byte is
///   closed (``IdleGuard``); one the server closes leaves the pool. Idle connections are closed
///   after ``idleTime`` unused (the configuration's
///   `connectionPool.idleTimeout`); at most ``limit`` are kept.
/// - **A lease cannot race a close**: an idle connection is handed to its request on the
///   connection's event loop, where the request attaches to it only if it is still open and
///   unused (``PinnedConnection/attach(_:)``); otherwise the request asks again, first in line.
///
/// ``shutdown()`` closes every connection, idle or busy, and fails every waiting request.
///
/// Thread safety: the pool's state is behind one lock, never held while a channel is closed, a
/// connection is opened or a request is told of its connection.
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

    /// What a request is told when it has a connection: the connection, and whether it carried
    /// an exchange before; or why none could be opened.
    typealias Delivery = @Sendable (Result<(connection: PinnedConnection, reused: Bool), any Error>) -> Void


    private struct Idle {
        let connection: PinnedConnection
        let expiry: Scheduled<Void>
    }

    /// A request waiting for a connection.
    private struct Waiter {
        let id: Int
        let tls: TLS?
        /// It must be given a connection that never carried an exchange.
        let fresh: Bool
        let deliver: Delivery
    }

    /// A connection being opened for the request `id`: the channels created for it so far.
    private struct Attempt {
        let key: Key
        var channels: [any Channel] = []
    }

    private struct Host {
        /// Connections open or being opened.
        var total = 0
        var idle: [Idle] = []
        var queue = CircularBuffer<Waiter>()
    }

    private struct State {
        var hosts: [Key: Host] = [:]
        /// The attempts in progress, by the request they are for.
        var attempts: [Int: Attempt] = [:]
        /// Every open connection that holds a place under its key's limit, idle or busy.
        var open: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false
        /// Connections opened so far.
        var opened = 0
        var nextID = 0
    }

    /// What to do, outside the lock, after a change of state.
    private enum Step {
        case deliver(Delivery, PinnedConnection)
        case connect(id: Int, key: Key, tls: TLS?, deliver: Delivery)
        case close(any Channel)
        case fail(Delivery, any Error)
        case cancel(Scheduled<Void>)
    }

    private let state = NIOLockedValueBox(State())
    let eventLoopGroup: any EventLoopGroup
    private let connectTimeout: TimeAmount
    /// The most connections open or being opened per key, and the most idle ones kept.
    let limit: Int

    /// How long an idle connection is kept.
    let idleTime: TimeAmount

    /// A pool whose connections run on `eventLoopGroup`, each opened within `connectTimeout`
    /// (and its TLS handshake within the same time after), at most `limit` per key, an idle one
    /// closed after `idleTime` unused.
    init(eventLoopGroup: any EventLoopGroup, connectTimeout: TimeAmount, limit: Int, idleTime: TimeAmount) {
        self.eventLoopGroup = eventLoopGroup
        self.connectTimeout = connectTimeout
        self.limit = max(1, limit)
        self.idleTime = idleTime
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

    /// The number of requests waiting for a connection (for tests).
    var waitingCount: Int {
        state.withLockedValue { $0.hosts.values.reduce(0) { $0 + $1.queue.count } }
    }

    // MARK: Leasing

    /// Asks for a connection of `key`: an idle one, a new one while the key is under its limit,
    /// or the next one released, in the order of asking (`first`: ahead of everyone, for a
    /// request that must ask again). With `fresh`, only a connection opened for it. `deliver`
    /// is called once, never synchronously; a connection is delivered on its event loop. Returns
    /// the ticket that ``cancel(_:)`` takes.
    @discardableResult
    func lease(_ key: Key, tls: TLS?, first: Bool = false, fresh: Bool = false, _ deliver: @escaping Delivery) -> Int {
        let (id, steps) = state.withLockedValue { state -> (Int, [Step]) in
            state.nextID += 1
            let id = state.nextID
            guard !state.isShutDown else { return (id, [.fail(deliver, ChannelError.ioOnClosedChannel)]) }
            if !fresh, let idle = state.hosts[key]?.idle.popLast() {
                return (id, [.cancel(idle.expiry), .deliver(deliver, idle.connection)])
            }
            if state.hosts[key, default: Host()].total < limit {
                state.hosts[key, default: Host()].total += 1
                state.attempts[id] = Attempt(key: key)
                return (id, [.connect(id: id, key: key, tls: tls, deliver: deliver)])
            }
            if fresh, let idle = state.hosts[key]?.idle.popLast() {
                // An idle connection gives its place to a new one.
                state.open.removeValue(forKey: ObjectIdentifier(idle.connection.channel))
                state.attempts[id] = Attempt(key: key)
                return (id, [.cancel(idle.expiry), .close(idle.connection.channel), .connect(id: id, key: key, tls: tls, deliver: deliver)])
            }
            let waiter = Waiter(id: id, tls: tls, fresh: fresh, deliver: deliver)
            if first {
                state.hosts[key, default: Host()].queue.prepend(waiter)
            } else {
                state.hosts[key, default: Host()].queue.append(waiter)
            }
            return (id, [])
        }
        run(steps)
        return id
    }

    /// Withdraws the request of `ticket`: out of the queue if it waits; the connection being
    /// opened for it closed. A ticket already served is ignored.
    func cancel(_ ticket: Int) {
        let channels = state.withLockedValue { state -> [any Channel] in
            if let attempt = state.attempts.removeValue(forKey: ticket) { return attempt.channels }
            for key in state.hosts.keys {
                guard let index = state.hosts[key]?.queue.firstIndex(where: { $0.id == ticket }) else { continue }
                state.hosts[key]?.queue.remove(at: index)
                break
            }
            return []
        }
        // The attempt's connect then fails, which gives its place to the next request.
        for channel in channels { channel.close(promise: nil) }
    }

    /// Puts `connection` (at the end of a complete ordinary response) back: to the request that
    /// waited longest, or into the idle pool; closes it when the pool is shut down or full.
    func release(_ connection: PinnedConnection) {
        let channel = connection.channel
        let id = ObjectIdentifier(channel)
        let expiry = channel.eventLoop.scheduleTask(in: idleTime) { [weak self] () -> Void in
            self?.expire(connection)
        }
        let steps = state.withLockedValue { state -> [Step] in
            guard !state.isShutDown, state.open[id] != nil else { return [.cancel(expiry), .close(channel)] }
            if let waiter = state.hosts[connection.key]?.queue.popFirst() {
                guard waiter.fresh else { return [.cancel(expiry), .deliver(waiter.deliver, connection)] }
                // The connection gives its place to a new one for the waiter.
                state.open.removeValue(forKey: id)
                state.attempts[waiter.id] = Attempt(key: connection.key)
                return [.cancel(expiry), .close(channel), .connect(id: waiter.id, key: connection.key, tls: waiter.tls, deliver: waiter.deliver)]
            }
            guard (state.hosts[connection.key]?.idle.count ?? 0) < limit else { return [.cancel(expiry), .close(channel)] }
            state.hosts[connection.key, default: Host()].idle.append(Idle(connection: connection, expiry: expiry))
            return []
        }
        run(steps)
    }

    /// Closes an idle connection that stayed unused for ``idleTime``.
    private func expire(_ connection: PinnedConnection) {
        let removed = state.withLockedValue { state -> Bool in
            guard let index = state.hosts[connection.key]?.idle.firstIndex(where: { $0.connection === connection }) else { return false }
            state.hosts[connection.key]?.idle.remove(at: index)
            return true
        }
        if removed { connection.channel.close(promise: nil) }
    }

    /// Frees the place of a connection of `key` that closed or could not be opened, and gives it
    /// to the request that waited longest.
    private func freePlace(of key: Key, steps: inout [Step], state: inout State) {
        state.hosts[key, default: Host()].total -= 1
        guard !state.isShutDown, let host = state.hosts[key], host.total < limit,
              let waiter = state.hosts[key]?.queue.popFirst()
        else { return }
        state.hosts[key]?.total += 1
        state.attempts[waiter.id] = Attempt(key: key)
        steps.append(.connect(id: waiter.id, key: key, tls: waiter.tls, deliver: waiter.deliver))
    }

    /// Forgets a connection that closed.
    private func closed(_ connection: PinnedConnection) {
        let steps = state.withLockedValue { state -> [Step] in
            var steps: [Step] = []
            if let index = state.hosts[connection.key]?.idle.firstIndex(where: { $0.connection === connection }),
               let idle = state.hosts[connection.key]?.idle.remove(at: index) {
                steps.append(.cancel(idle.expiry))
            }
            // A connection that gave its place away already left `open`.
            if state.open.removeValue(forKey: ObjectIdentifier(connection.channel)) != nil {
                freePlace(of: connection.key, steps: &steps, state: &state)
            }
            return steps
        }
        run(steps)
    }

    private func run(_ steps: [Step]) {
        for step in steps {
            switch step {
            case let .deliver(deliver, connection):
                // On the connection's loop, where the request checks that it is still usable.
                connection.channel.eventLoop.execute { deliver(.success((connection: connection, reused: true))) }
            case let .connect(id, key, tls, deliver):
                connect(id: id, key: key, tls: tls, deliver: deliver)
            case let .close(channel):
                channel.close(promise: nil)
            case let .fail(deliver, error):
                eventLoopGroup.any().execute { deliver(.failure(error)) }
            case let .cancel(scheduled):
                scheduled.cancel()
            }
        }
    }

    // MARK: Opening

    /// Opens a connection for the request `id` (its place under the limit already taken):
    /// connected, and for TLS with its handshake complete (and so its chain verified). Fails with
    /// ``PinFailure`` when a pinned rule's verification failed.
    private func connect(id: Int, key: Key, tls: TLS?, deliver: @escaping Delivery) {
        let loop = eventLoopGroup.next()
        let verdict = NIOLockedValueBox<PinVerifier.Verdict?>(nil)
        let ready = loop.makePromise(of: Void.self)
        let isAddress = (try? SocketAddress(ipAddress: key.host, port: key.port)) != nil
        let handshakeTimeout = connectTimeout
        let admitted = NIOLockedValueBox(false)
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [weak self] channel in
                // The attempt knows its channels, so that cancelling it closes them.
                let wanted = self?.state.withLockedValue { state -> Bool in
                    guard state.attempts[id] != nil else { return false }
                    state.attempts[id]?.channels.append(channel)
                    return true
                } ?? false
                guard wanted else { return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    let handler = PinnedConnectionHandler(ready: ready, isTLS: tls != nil, handshakeTimeout: handshakeTimeout)
                    if let tls {
                        // Server Name Indication names hosts, never addresses.
                        let name = isAddress ? nil : key.host
                        if let verifier = tls.verifier {
                            let host = key.host
                            let bound = NIOLoopBound(handler, eventLoop: channel.eventLoop)
                            try pipeline.addHandler(NIOSSLClientHandler(context: tls.context, serverHostname: name) { presented, promise in
                                // The chain is validated off the event loop; the handshake waits.
                                // The server has answered: the handshake's deadline waits too
                                // (the check is local work), and starts again after it.
                                bound.value.pauseDeadline()
                                Task {
                                    let result = await verifier.verify(presented, host: host)
                                    verdict.withLockedValue { $0 = result }
                                    promise.futureResult.eventLoop.execute { bound.value.resumeDeadline() }
                                    promise.succeed(result == .trusted ? .certificateVerified : .failed)
                                }
                            })
                        } else {
                            try pipeline.addHandler(NIOSSLClientHandler(context: tls.context, serverHostname: name))
                        }
                    }
                    try pipeline.addHandler(IdleGuard())
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(handler)
                }
            }
            .connect(host: key.host, port: key.port)
            .flatMap { channel -> EventLoopFuture<PinnedConnection> in
                let connection = PinnedConnection(channel: channel, key: key)
                let isAdmitted = self.state.withLockedValue { state -> Bool in
                    guard !state.isShutDown, state.attempts[id] != nil else { return false }
                    state.open[ObjectIdentifier(channel)] = channel
                    state.opened += 1
                    admitted.withLockedValue { $0 = true }
                    return true
                }
                guard isAdmitted else {
                    channel.close(promise: nil)
                    return loop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                channel.closeFuture.whenComplete { [weak self] _ in self?.closed(connection) }
                return ready.futureResult.map { connection }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    if let verdict = verdict.withLockedValue({ $0 }), verdict != .trusted {
                        throw PinFailure(verdict: verdict, underlying: error)
                    }
                    throw error
                }
            }
            .whenComplete { [self] result in
                // A connect that failed never reached the pipeline's handler.
                if case .failure(let error) = result { ready.fail(error) }
                let (steps, wanted) = state.withLockedValue { state -> ([Step], Bool) in
                    let wanted = state.attempts.removeValue(forKey: id) != nil
                    var steps: [Step] = []
                    // The place of a connection that was never admitted is freed here; an
                    // admitted one's when it closes.
                    if !admitted.withLockedValue({ $0 }) { freePlace(of: key, steps: &steps, state: &state) }
                    return (steps, wanted)
                }
                run(steps)
                switch result {
                case .success(let connection):
                    if wanted {
                        deliver(.success((connection: connection, reused: false)))
                    } else {
                        // Its request went away just as it opened: the next one takes it.
                        release(connection)
                    }
                case .failure(let error):
                    if wanted { deliver(.failure(error)) }
                }
            }
    }

    /// Closes every connection, idle or busy, and fails every waiting request; later leases fail.
    func shutdown() -> EventLoopFuture<Void> {
        let (channels, idle, waiters, attempts) = state.withLockedValue { state -> ([any Channel], [Idle], [Waiter], [Attempt]) in
            state.isShutDown = true
            // The attempts stay: closing their channels fails them, which tells their requests.
            defer {
                for key in state.hosts.keys {
                    state.hosts[key]?.idle = []
                    state.hosts[key]?.queue = CircularBuffer()
                }
            }
            return (
                Array(state.open.values),
                state.hosts.values.flatMap(\.idle),
                state.hosts.values.flatMap(\.queue),
                Array(state.attempts.values)
            )
        }
        for entry in idle { entry.expiry.cancel() }
        for waiter in waiters { waiter.deliver(.failure(ChannelError.ioOnClosedChannel)) }
        let closes = (channels + attempts.flatMap(\.channels)).map { channel in channel.close().recover { _ in } }
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

    /// Makes `exchange` the receiver of the connection's events, if the connection is still open
    /// and carries no other exchange; whether it did. On the event loop, so that a close is
    /// either seen here or reported to the exchange later, never lost in between.
    func attach(_ exchange: PinnedExchange) -> Bool {
        channel.eventLoop.preconditionInEventLoop()
        let pipeline = channel.pipeline.syncOperations
        guard channel.isActive,
              let handler = try? pipeline.handler(type: PinnedConnectionHandler.self),
              let guarder = try? pipeline.handler(type: IdleGuard.self),
              handler.exchange == nil, !handler.isClosed
        else { return false }
        handler.exchange = exchange
        guarder.isLeased = true
        return true
    }

    /// Makes the connection idle: nobody receives its events, and a byte arriving closes it.
    /// On the event loop.
    func detach() {
        channel.eventLoop.preconditionInEventLoop()
        let pipeline = channel.pipeline.syncOperations
        (try? pipeline.handler(type: PinnedConnectionHandler.self))?.exchange = nil
        (try? pipeline.handler(type: IdleGuard.self))?.isLeased = false
    }
}

/// The first handler after TLS on a pinned-path connection: while the connection is idle
/// (leased by no exchange), a byte that arrives answers no request, so the connection is closed
/// and the byte dropped, never buffered. Confined to the channel's event loop.
final class IdleGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// An exchange uses the connection.
    var isLeased = false
    /// The connection is being opened: the first request is sent once it is ready.
    private var isNew = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard isLeased || isNew else {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// The connection is ready and goes to its first request: from now on, only a leased
    /// connection reads.
    func opened() {
        isNew = false
    }
}

/// The last handler of a pinned-path connection: completes the connection's readiness (connected;
/// for TLS, handshake complete within the handshake timeout, not counting the transport's own
/// check of a pinned chain) and hands response parts, errors and
/// the close to the exchange using the connection. Confined to the channel's event loop.
final class PinnedConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private var ready: EventLoopPromise<Void>?
    private let isTLS: Bool
    private let handshakeTimeout: TimeAmount
    private var handshakeDeadline: Scheduled<Void>?
    /// The exchange using the connection, if any.
    var exchange: PinnedExchange?
    /// The connection closed, failed, or is closing.
    private(set) var isClosed = false

    /// A handler whose `ready` is completed when the connection is (for TLS, when the handshake
    /// completes; failed with `HTTPClientError.tlsHandshakeTimeout` and the channel closed when it
    /// has not `handshakeTimeout` after the connection became active).
    init(ready: EventLoopPromise<Void>, isTLS: Bool, handshakeTimeout: TimeAmount) {
        self.ready = ready
        self.isTLS = isTLS
        self.handshakeTimeout = handshakeTimeout
    }

    private func succeedReady(context: ChannelHandlerContext) {
        handshakeDeadline?.cancel()
        handshakeDeadline = nil
        (try? context.pipeline.syncOperations.handler(type: IdleGuard.self))?.opened()
        ready?.succeed()
        ready = nil
    }

    private func failReady(_ error: any Error) {
        handshakeDeadline?.cancel()
        handshakeDeadline = nil
        ready?.fail(error)
        ready = nil
    }

    /// The context, once the handler is in a pipeline (for the deadline restarted after a pin
    /// check).
    private var context: ChannelHandlerContext?
    /// The deadline is paused while the transport checks the server's chain.
    private var isPaused = false

    /// Stops the handshake's deadline while the server's chain is checked.
    func pauseDeadline() {
        isPaused = true
        handshakeDeadline?.cancel()
        handshakeDeadline = nil
    }

    /// Starts the handshake's deadline again, in full, after the chain was checked.
    func resumeDeadline() {
        isPaused = false
        if let context { startDeadline(context: context) }
    }

    private func startDeadline(context: ChannelHandlerContext) {
        guard isTLS, ready != nil, handshakeDeadline == nil, !isPaused else { return }
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        handshakeDeadline = context.eventLoop.scheduleTask(in: handshakeTimeout) {
            bound.value.handler.handshakeTimedOut(context: bound.value.context)
        }
    }

    private func handshakeTimedOut(context: ChannelHandlerContext) {
        handshakeDeadline = nil
        guard ready != nil else { return }
        failReady(HTTPClientError.tlsHandshakeTimeout)
        isClosed = true
        context.close(promise: nil)
    }

    func channelActive(context: ChannelHandlerContext) {
        if isTLS { startDeadline(context: context) } else { succeedReady(context: context) }
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard context.channel.isActive else { return }
        if isTLS { startDeadline(context: context) } else { succeedReady(context: context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent { succeedReady(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else {
            // A response on an idle connection answers no request: the connection is not reusable.
            isClosed = true
            context.close(promise: nil)
            return
        }
        exchange.receive(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        isClosed = true
        failReady(error)
        let exchange = exchange
        self.exchange = nil
        exchange?.connectionFailed(error, channel: context.channel)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        failReady(ChannelError.eof)
        let exchange = exchange
        self.exchange = nil
        exchange?.connectionFailed(nil, channel: context.channel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        handshakeDeadline?.cancel()
        handshakeDeadline = nil
    }
}
