import Foundation

/// One connection's life: read requests, answer them, until either side closes or the server
/// stops. Runs on the connection's own thread; every wait also watches the server's wake pipe.
extension LoopbackServerCore {
    /// Why a connection's loop ended, or that it may go on.
    enum Outcome {
        /// The exchange completed; the connection stays open for the next request.
        case keepOpen
        /// The server closes the connection (the response asked for it, or it was malformed).
        case close
        /// The client closed or reset the connection.
        case clientClosed
        /// The server is stopping.
        case stopped
    }

    /// Bytes kept buffered from a client while a response is delayed; past this the server stops
    /// reading until it answers.
    private static var maxBuffered: Int { LoopbackRequestParser.maxHeadBytes + LoopbackRequestParser.maxBodyBytes }

    func serve(fd: Int32, id: Int, wake: Int32) {
        var buffer: [UInt8] = []
        var outcome = Outcome.keepOpen
        while outcome == .keepOpen {
            outcome = serveOneRequest(fd: fd, id: id, wake: wake, buffer: &buffer)
            touch()
        }
        connectionEnded(id: id, fd: fd, byClient: outcome == .clientClosed)
    }

    private func serveOneRequest(fd: Int32, id: Int, wake: Int32, buffer: inout [UInt8]) -> Outcome {
        var reader = LoopbackRequestReader()
        var sentContinue = false
        while true {
            switch reader.read(buffer) {
            case .invalid(let rejection):
                return reject(rejection, fd: fd)
            case .complete(let parsed):
                buffer.removeFirst(parsed.end)
                let head = parsed.head
                let request = LoopbackRequest(
                    method: head.method, target: head.target, version: head.version,
                    headers: head.headers, body: parsed.body, connectionID: id
                )
                return respond(to: request, closing: head.wantsClose, fd: fd, wake: wake, buffer: &buffer)
            case .incomplete:
                if let head = reader.parsedHead, head.expectsContinue, !sentContinue {
                    sentContinue = true
                    guard POSIX.sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .clientClosed }
                }
            }
            switch POSIX.waitReadable(fd, wake: wake, timeoutMilliseconds: -1) {
            case .woken: return .stopped
            case .timedOut: continue
            case .readable: break
            }
            if POSIX.receive(fd, into: &buffer) <= 0 { return .clientClosed }
        }
    }

    private func reject(_ rejection: LoopbackRequestParser.Rejection, fd: Int32) -> Outcome {
        var response = LoopbackResponse.text("LoopbackServer: \(rejection.reason)\n", status: rejection.status)
        response.closesConnection = true
        _ = POSIX.sendAll(fd, response.head(forMethod: "GET", closing: true) + Array(response.body.data))
        return .close
    }

    private func respond(to request: LoopbackRequest, closing clientWantsClose: Bool, fd: Int32, wake: Int32, buffer: inout [UInt8]) -> Outcome {
        let response = answer(to: request)
        if response.delay > .zero {
            let waited = wait(response.delay, fd: fd, wake: wake, buffer: &buffer)
            if waited != .keepOpen { return waited }
        }
        if response.ending == .dropConnection { return .close }
        let closing = clientWantsClose || response.closesAfterward || response.ending != .complete
        var limit = Int.max
        if case .closeMidBody(let afterBytes) = response.ending { limit = afterBytes }
        let head = response.head(forMethod: request.method, closing: closing)
        let sendsBody = !response.hasNoBody(forMethod: request.method)
        let failed: Outcome = isStopping ? .stopped : .clientClosed
        switch response.body {
        case .raw(let data):
            guard POSIX.sendAll(fd, Array(data.prefix(limit))) else { return failed }
        case .whole(let data):
            var bytes = head
            if sendsBody { bytes += data.prefix(limit) }
            if sendsBody { countBodyBytes(min(limit, data.count)) }
            guard POSIX.sendAll(fd, bytes) else { return failed }
        case .scripted(let steps, let length):
            return runScript(steps, head: head, chunked: length == nil, sendsBody: sendsBody, closing: closing, fd: fd, wake: wake, buffer: &buffer)
        case .chunked(let chunks, let interval):
            guard POSIX.sendAll(fd, head) else { return failed }
            guard sendsBody else { break }
            var remaining = limit
            for (index, chunk) in chunks.filter({ !$0.isEmpty }).enumerated() {
                if index > 0, interval > .zero {
                    let waited = wait(interval, fd: fd, wake: wake, buffer: &buffer)
                    if waited != .keepOpen { return waited }
                }
                let size = Array(String(chunk.count, radix: 16).utf8) + [13, 10]
                if chunk.count > remaining {
                    countBodyBytes(remaining)
                    _ = POSIX.sendAll(fd, size + chunk.prefix(remaining))
                    return .close
                }
                countBodyBytes(chunk.count)
                guard POSIX.sendAll(fd, size + chunk + [13, 10]) else { return isStopping ? .stopped : .clientClosed }
                remaining -= chunk.count
            }
            if limit != .max { return .close }
            guard POSIX.sendAll(fd, Array("0\r\n\r\n".utf8)) else { return isStopping ? .stopped : .clientClosed }
        case .paced(let pieces, let interval):
            guard POSIX.sendAll(fd, head) else { return failed }
            guard sendsBody else { break }
            var remaining = limit
            for (index, piece) in pieces.enumerated() where !piece.isEmpty {
                if index > 0, interval > .zero {
                    let waited = wait(interval, fd: fd, wake: wake, buffer: &buffer)
                    if waited != .keepOpen { return waited }
                }
                countBodyBytes(min(remaining, piece.count))
                guard POSIX.sendAll(fd, Array(piece.prefix(remaining))) else { return failed }
                remaining -= min(remaining, piece.count)
                if remaining == 0 { return .close }
            }
        }
        return closing ? .close : .keepOpen
    }

    /// Counts `count` body bytes about to be handed to the socket (see
    /// ``LoopbackServer/sentBodyByteCount``): counted before the send, so a client that has
    /// received them sees them counted.
    private func countBodyBytes(_ count: Int) {
        guard count > 0 else { return }
        mutate { $0.sentBodyBytes += count }
    }

    private var isStopping: Bool {
        state.withLock { $0.phase != .running }
    }

    /// Waits `duration` of real time, but returns at once if the server stops (`.stopped`) or the
    /// client closes the connection (`.clientClosed`). Bytes the client sends meanwhile (a
    /// pipelined request) are buffered. Returns `.keepOpen` when the time has passed.
    private func wait(_ duration: Duration, fd: Int32, wake: Int32, buffer: inout [UInt8]) -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: duration)
        while true {
            let remaining = clock.now.duration(to: deadline)
            if remaining <= .zero { return .keepOpen }
            let watched: Int32? = buffer.count < Self.maxBuffered ? fd : nil
            switch POSIX.waitReadable(watched, wake: wake, timeoutMilliseconds: POSIX.milliseconds(remaining)) {
            case .woken: return .stopped
            case .timedOut: continue
            case .readable:
                if POSIX.receive(fd, into: &buffer) <= 0 { return .clientClosed }
            }
        }
    }
}
