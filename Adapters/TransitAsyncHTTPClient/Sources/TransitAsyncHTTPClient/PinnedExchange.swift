import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Signals
import Transit

/// One request on the transport's own SwiftNIO HTTP/1.1 path (``PinnedConnections``), delivered
/// as ``HTTPResponsePart``s by the rules of the AsyncHTTPClient path: the head as soon as it is
/// parsed, each body chunk as it is read (decoded by ``ContentDecoder`` when the head announces
/// gzip or deflate), then the end; the 3xx of a redirect delivered as it is; `timeoutInterval` of
/// silence swept by the transport's ``IdleSweeper``; errors mapped by ``ErrorMapping``.
///
/// The request is written only once the connection is ready: connected and, for https, its TLS
/// handshake complete, which for a pinned host means its chain validated and a pin matched.
///
/// The connection comes from the pool (``PinnedConnections``), first come first served under its
/// per-host limit; it is attached on its event loop only if still open, so a close is either seen
/// before the request is written or reported to the exchange after. It goes back to the pool only
/// after a complete ordinary response (read to its end, framed by `Content-Length` or chunked,
/// the request written whole, neither side asking to close, not a `101` or a `2xx` to
/// `CONNECT`); every other ending closes it. An exchange that ends while it waits leaves the
/// queue, and one whose connection is being opened closes it.
///
/// Retry: a request on a pooled connection that closes, is reset or fails the request's write
/// before any byte of the response arrived is sent once more on a new connection, when its
/// method is idempotent (the server may have closed the idle connection as the request left);
/// otherwise it fails with `.networkConnectionLost` at once. Nothing else is retried.
///
/// Thread safety: the response callbacks run on the connection's event loop, one at a time;
/// `cancel()` and `expire()` may come from any thread. The mutable state is behind a lock that is
/// never held while the observer runs.
final class PinnedExchange: IdleSweeper.Exchange {
    /// How a request is framed and sent, computed once.
    struct Prepared: Sendable {
        let url: URL
        let key: PinnedConnections.Key
        let head: HTTPRequestHead
        let body: Body
        /// The method may be sent twice (RFC 9110 §9.2.2).
        let isIdempotent: Bool
        /// The request carried its own `Accept-Encoding`.
        let callerChoseEncodings: Bool

        enum Body: Sendable {
            case none
            case bytes(ByteBuffer)
            case file(path: String, size: Int64)
        }
    }

    private struct State {
        var connection: PinnedConnection?
        var lastActivity: NIODeadline
        /// The exchange ended, failed or was cancelled: nothing more is delivered.
        var ended = false
        var decoder: ContentDecoder?
        /// A byte of the response arrived on the current connection.
        var receivedAny = false
        /// The whole request was written.
        var requestSent = false
        /// The response head allows keeping the connection.
        var responseKeepAlive = false
        /// The connection carried an exchange before this one.
        var reused = false
        /// The request was already sent once more after a pooled connection closed.
        var retried = false
        /// The pool's ticket while the exchange waits for a connection (or one is opened for it).
        var ticket: Int?
    }

    private let prepared: Prepared
    private let tls: PinnedConnections.TLS?
    private let pool: PinnedConnections
    private let observer: Observer<HTTPResponsePart, any Error>
    private let idleTimeout: TimeAmount?
    private let sweeper: IdleSweeper
    private let decompression: AsyncHTTPClientTransport.Decompression
    private let state: NIOLockedValueBox<State>

    init(
        prepared: Prepared,
        tls: PinnedConnections.TLS?,
        pool: PinnedConnections,
        observer: Observer<HTTPResponsePart, any Error>,
        idleTimeout: TimeInterval,
        sweeper: IdleSweeper,
        decompression: AsyncHTTPClientTransport.Decompression
    ) {
        self.prepared = prepared
        self.tls = tls
        self.pool = pool
        self.observer = observer
        self.sweeper = sweeper
        self.decompression = decompression
        self.idleTimeout = IdleSweeper.silenceAllowed(byTimeoutInterval: idleTimeout)
        state = NIOLockedValueBox(State(lastActivity: .now()))
    }

    // MARK: Preparing

    /// `request` as the pinned path sends it, or the `URLError` it fails with before anything is
    /// sent. `rule` is the host of the pinned rule, `nil` for none.
    static func prepare(_ request: TransportRequest, rule: String?, decompression: AsyncHTTPClientTransport.Decompression) throws -> Prepared {
        guard let url = request.url else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request has no URL."])
        }
        let isTLS: Bool
        switch url.scheme?.lowercased() {
        case "http"?: isTLS = false
        case "https"?: isTLS = true
        case nil:
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request's URL has no scheme.", NSURLErrorFailingURLErrorKey: url])
        default:
            throw URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "AsyncHTTPClientTransport sends http and https requests only.",
                NSURLErrorFailingURLErrorKey: url,
            ])
        }
        guard let rawHost = url.host, !rawHost.isEmpty else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request's URL has no host.", NSURLErrorFailingURLErrorKey: url])
        }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let defaultPort = isTLS ? 443 : 80
        let port = url.port ?? defaultPort
        guard (0...65535).contains(port) else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request's URL has an invalid port.", NSURLErrorFailingURLErrorKey: url])
        }

        // The fields in their order, a repeated field as many times as it was given.
        var headers = HTTPHeaders()
        if !request.headerFields.isEmpty {
            headers.reserveCapacity(request.headerFields.count + 3)
            for field in request.headerFields {
                headers.add(name: field.name, value: field.value)
            }
        }
        let method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        let body: Prepared.Body
        if let file = request.bodyFile {
            body = try fileBody(file)
        } else if let data = request.body {
            body = data.isEmpty ? .none : .bytes(ByteBuffer(data: data))
        } else if request.bodyStream != nil {
            throw URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "A request body from httpBodyStream is not supported; give the body as httpBody or as a body file.",
                NSURLErrorFailingURLErrorKey: url,
            ])
        } else {
            body = .none
        }
        // The framing is the transport's: what the body is, not what a header claims.
        headers.remove(name: "Content-Length")
        headers.remove(name: "Transfer-Encoding")
        switch body {
        case .none:
            switch method {
            case .GET, .HEAD, .DELETE, .CONNECT, .TRACE: break
            default: headers.add(name: "Content-Length", value: "0")
            }
        case .bytes(let buffer):
            headers.add(name: "Content-Length", value: String(buffer.readableBytes))
        case .file(_, let size):
            headers.add(name: "Content-Length", value: String(size))
        }
        if !headers.contains(name: "Host") {
            let name = host.contains(":") ? "[\(host)]" : host
            headers.add(name: "Host", value: port == defaultPort ? name : "\(name):\(port)")
        }
        let callerChoseEncodings = headers.contains(name: "Accept-Encoding")
        if !callerChoseEncodings, decompression != .disabled {
            headers.add(name: "Accept-Encoding", value: "gzip, deflate")
        }
        var path = url.path.isEmpty ? "/" : (URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path)
        if path.isEmpty { path = "/" }
        if let query = url.query { path += "?" + query }
        let head = HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)
        let key = PinnedConnections.Key(isTLS: isTLS, host: host.lowercased(), port: port, rule: rule)
        let isIdempotent: Bool
        switch method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: isIdempotent = true
        default: isIdempotent = false
        }
        return Prepared(url: url, key: key, head: head, body: body, isIdempotent: isIdempotent, callerChoseEncodings: callerChoseEncodings)
    }

    /// A body streamed from `file`: its size, checked now.
    private static func fileBody(_ file: URL) throws -> Prepared.Body {
        let path = file.path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            let code: URLError.Code = FileManager.default.fileExists(atPath: path) ? .cannotOpenFile : .fileDoesNotExist
            throw URLError(code, userInfo: [
                NSLocalizedDescriptionKey: "The body file \(path) cannot be read.",
                NSURLErrorFailingURLErrorKey: file,
            ])
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular, let size = (attributes[.size] as? NSNumber)?.int64Value else {
            throw URLError(.cannotOpenFile, userInfo: [NSLocalizedDescriptionKey: "The body file \(path) is not a regular file."])
        }
        return .file(path: path, size: size)
    }

    // MARK: Running

    /// Starts the exchange: asks the pool for a connection of its key (an idle one, a new one, or
    /// the next one released, first come first served).
    func start() {
        if let idleTimeout { sweeper.register(self, timeout: idleTimeout) }
        acquire(first: false, fresh: false)
    }

    /// Asks the pool for a connection; `first` puts the request ahead of those waiting (it asks
    /// again), `fresh` asks for a new connection (the retry after a reused one closed).
    private func acquire(first: Bool, fresh: Bool) {
        let ticket = pool.lease(prepared.key, tls: tls, first: first, fresh: fresh) { [self] result in
            switch result {
            case .success(let leased):
                attach(leased.connection, reused: leased.reused)
            case .failure(let error):
                fail(error)
            }
        }
        let ended = state.withLockedValue { state -> Bool in
            if state.ended { return true }
            state.ticket = ticket
            return false
        }
        // Ended while asking: the request leaves the queue, its connection attempt is closed.
        if ended { pool.cancel(ticket) }
    }

    /// Makes `connection` the exchange's and sends the request. On the connection's event loop,
    /// where the connection's close cannot happen between the check that it is usable and the
    /// attachment: a close before is seen here, a close after is reported to the exchange.
    private func attach(_ connection: PinnedConnection, reused: Bool) {
        let proceed = state.withLockedValue { state -> Bool in
            state.ticket = nil
            guard !state.ended else { return false }
            state.connection = connection
            state.reused = reused
            state.receivedAny = false
            state.requestSent = false
            state.responseKeepAlive = false
            state.lastActivity = .now()
            return true
        }
        guard proceed else {
            // Cancelled or expired while waiting: the connection, unused, goes to the next request.
            pool.release(connection)
            return
        }
        guard connection.attach(self) else {
            state.withLockedValue { state in
                if state.connection === connection { state.connection = nil }
            }
            if reused {
                // The pooled connection closed before it could be used: ask again, first in line.
                acquire(first: true, fresh: false)
            } else {
                fail(ChannelError.eof)
            }
            return
        }
        send(on: connection)
    }

    /// Writes the request: its head, its body, its end.
    private func send(on connection: PinnedConnection) {
        let channel = connection.channel
        channel.write(HTTPClientRequestPart.head(prepared.head), promise: nil)
        let sent: EventLoopFuture<Void>
        switch prepared.body {
        case .none:
            sent = channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        case .bytes(let buffer):
            channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
            sent = channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        case .file(let path, let size):
            channel.flush()
            let pool = NIOThreadPool.singleton
            let loop = channel.eventLoop
            sent = pool.runIfActive(eventLoop: loop) { try BodyFile(path: path) }.flatMap { [self] file in
                pump(file, remaining: size, channel: channel, pool: pool).always { _ in file.close() }
            }.flatMap {
                channel.writeAndFlush(HTTPClientRequestPart.end(nil))
            }
        }
        sent.whenComplete { [self] result in
            switch result {
            case .success:
                touch()
                state.withLockedValue { state in
                    if state.connection === connection { state.requestSent = true }
                }
            case .failure(let error):
                // Whether the close or the failed write is heard first, the exchange hears one.
                connectionFailed(error, channel: channel)
            }
        }
    }

    /// Reads and writes the rest of `file`, one piece at a time, each read after the previous
    /// piece was written.
    private func pump(_ file: BodyFile, remaining: Int64, channel: any Channel, pool: NIOThreadPool) -> EventLoopFuture<Void> {
        let loop = channel.eventLoop
        guard remaining > 0 else { return loop.makeSucceededVoidFuture() }
        guard !state.withLockedValue({ $0.ended }) else { return loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        let count = Int(min(remaining, Int64(RequestConversion.fileChunkSize)))
        return pool.runIfActive(eventLoop: loop) { try file.read(upTo: count) }.flatMap { [self] buffer in
            guard buffer.readableBytes > 0 else {
                return loop.makeFailedFuture(URLError(.cannotOpenFile, userInfo: [
                    NSLocalizedDescriptionKey: "The body file \(file.path) became shorter while it was being sent.",
                ]))
            }
            let sent = Int64(buffer.readableBytes)
            return channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(buffer))).flatMap { [self] in
                touch()
                return pump(file, remaining: remaining - sent, channel: channel, pool: pool)
            }
        }
    }

    // MARK: Receiving (on the connection's event loop)

    func receive(_ part: HTTPClientResponsePart) {
        let now = NIODeadline.now()
        let active = state.withLockedValue { state -> Bool in
            guard !state.ended else { return false }
            state.lastActivity = now
            state.receivedAny = true
            return true
        }
        guard active else { return }
        switch part {
        case .head(let head):
            receiveHead(head)
        case .body(let buffer):
            receiveBody(buffer)
        case .end:
            receiveEnd()
        }
    }

    private func receiveHead(_ head: NIOHTTP1.HTTPResponseHead) {
        let decoding = ExchangeDelegate.decoding(
            head, url: prepared.url, decompression: decompression, callerChoseEncodings: prepared.callerChoseEncodings
        )
        guard case .success(let (fields, decoder)) = decoding else {
            if case .failure(let error) = decoding { fail(error) }
            return
        }
        let keepAlive = head.isKeepAlive && prepared.head.isKeepAlive && Self.leavesConnectionReusable(head, request: prepared.head)
        state.withLockedValue {
            $0.decoder = decoder
            $0.responseKeepAlive = keepAlive
        }
        observer.send(.head(Transit.HTTPResponseHead(url: prepared.url, statusCode: Int(head.status.code), fields: fields)))
    }

    /// Whether, after `head` and its body, the connection is still an HTTP/1.1 connection ready
    /// for the next request: not after a `101` (another protocol follows) or a `2xx` to `CONNECT`
    /// (a tunnel follows), nor after a body that only the close ends (neither `Content-Length`
    /// nor chunked). `Connection: close` is checked by the caller.
    static func leavesConnectionReusable(_ head: NIOHTTP1.HTTPResponseHead, request: HTTPRequestHead) -> Bool {
        let status = head.status.code
        if status == 101 { return false }
        if request.method == .CONNECT, (200..<300).contains(status) { return false }
        if request.method == .HEAD || status == 204 || status == 304 || (100..<200).contains(status) { return true }
        if head.headers.contains(name: "Content-Length") { return true }
        return head.headers["Transfer-Encoding"].contains { $0.lowercased().contains("chunked") }
    }

    private func receiveBody(_ buffer: ByteBuffer) {
        do {
            try ExchangeDelegate.deliver(buffer, decoder: state.withLockedValue { $0.decoder }, to: observer) {
                state.withLockedValue { $0.ended }
            }
        } catch {
            fail(error)
        }
    }

    private func receiveEnd() {
        if let decoder = state.withLockedValue({ $0.decoder }) {
            do {
                try decoder.finish()
            } catch {
                fail(error)
                return
            }
        }
        let ending = state.withLockedValue { state -> (PinnedConnection, Bool)? in
            guard !state.ended, let connection = state.connection else { return nil }
            state.ended = true
            state.connection = nil
            return (connection, state.responseKeepAlive && state.requestSent)
        }
        guard let (connection, reusable) = ending else { return }
        if idleTimeout != nil { sweeper.unregister(self) }
        connection.detach()
        // Back into the pool before the end is delivered, so a request the consumer sends on
        // the end finds it.
        if reusable { pool.release(connection) } else { connection.channel.close(promise: nil) }
        observer.finish()
    }

    /// The connection `channel` failed with `error` (a read, or a write of the request), or
    /// closed (`nil`), while the exchange used it. Heard once per connection: the first report
    /// wins, a later one about the same connection (or an earlier one) is ignored.
    func connectionFailed(_ error: (any Error)?, channel: any Channel) {
        let decision = state.withLockedValue { state -> Bool? in
            guard !state.ended, let connection = state.connection, connection.channel === channel else { return nil }
            guard state.reused, !state.receivedAny, !state.retried, prepared.isIdempotent, Self.isConnectionLoss(error) else { return false }
            state.retried = true
            state.connection = nil
            return true
        }
        switch decision {
        case nil:
            return
        case true?:
            // The server closed the pooled connection as the request left: once more, on a new one.
            channel.close(promise: nil)
            acquire(first: true, fresh: true)
        case false?:
            fail(error ?? ChannelError.eof)
        }
    }

    /// Whether `error` (`nil`: the connection closed) says the connection was lost, as a server
    /// closing an idle connection causes: a close, a reset, a failed write. A reply that is not
    /// HTTP, or a TLS failure, is not.
    private static func isConnectionLoss(_ error: (any Error)?) -> Bool {
        guard let error else { return true }
        return error is ChannelError || error is IOError
    }

    // MARK: Ending

    /// Fails the exchange with `error` (mapped to its `URLError`, or a ``ServerTrustError``) and
    /// closes its connection; nothing is delivered after.
    private func fail(_ error: any Error) {
        let taken = state.withLockedValue { state -> (connection: PinnedConnection?, ticket: Int?)? in
            guard !state.ended else { return nil }
            state.ended = true
            defer {
                state.connection = nil
                state.ticket = nil
            }
            return (state.connection, state.ticket)
        }
        guard let taken else { return }
        if idleTimeout != nil { sweeper.unregister(self) }
        // No socket outlives the request: its connection, or the one being opened for it, closes.
        taken.connection?.channel.close(promise: nil)
        if let ticket = taken.ticket { pool.cancel(ticket) }
        observer.fail(mapped(error))
    }

    private func mapped(_ error: any Error) -> any Error {
        let host = prepared.url.host ?? prepared.key.host
        if pool.isShutDown, !(error is PinFailure) {
            return URLError(.cancelled, userInfo: [NSLocalizedDescriptionKey: "The transport was shut down; the request was cancelled."])
        }
        switch error {
        case let failure as PinFailure:
            switch failure.verdict {
            case .pinMismatch, .trusted:
                return ServerTrustError(host: host, reason: .pinMismatch)
            case .untrusted(let code):
                return ErrorMapping.urlError(ServerTrustError(host: host, reason: .untrusted), code: code)
            }
        default:
            return ErrorMapping.urlError(error)
        }
    }

    /// Cancels the exchange: its connection is closed; nothing is delivered afterwards.
    func cancel() {
        let taken = state.withLockedValue { state -> (connection: PinnedConnection?, ticket: Int?) in
            state.ended = true
            defer {
                state.connection = nil
                state.ticket = nil
            }
            return (state.connection, state.ticket)
        }
        if idleTimeout != nil { sweeper.unregister(self) }
        taken.connection?.channel.close(promise: nil)
        if let ticket = taken.ticket { pool.cancel(ticket) }
    }

    /// Whether nothing was sent or received for the idle timeout (an ended exchange never is).
    func isIdle(at now: NIODeadline) -> Bool {
        guard let idleTimeout else { return false }
        return state.withLockedValue { !$0.ended && $0.lastActivity + idleTimeout <= now }
    }

    /// Fails the exchange with `.timedOut` (the sweeper found it idle).
    func expire() {
        guard let idleTimeout else { return }
        let seconds = Double(idleTimeout.nanoseconds) / 1e9
        fail(URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The server sent nothing for \(seconds) seconds (the request's timeoutInterval); the request was cancelled.",
            NSURLErrorFailingURLErrorKey: prepared.url,
        ]))
    }

    private func touch() {
        guard idleTimeout != nil else { return }
        let now = NIODeadline.now()
        state.withLockedValue { $0.lastActivity = now }
    }
}
