import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import Signals
import Synchronization
import Transit

/// Receives one AsyncHTTPClient request's response and delivers it as ``HTTPResponsePart``s; is
/// swept for `URLRequest.timeoutInterval` of silence by its transport's ``IdleSweeper``.
///
/// Everything is delivered from AsyncHTTPClient's callbacks to the delegate, on the task's event
/// loop, one at a time: the head, the body chunks, and the end — `didFinishRequest` finishes the
/// signal, `didReceiveError` fails it. Nothing waits on the task's future (adding a callback to
/// it from another thread would cost a hop to that loop), except where AsyncHTTPClient may end a
/// task without telling its delegate: a request with a body (a failed write of the body's end),
/// and a client shut down while the request was being handed to it (``watchTaskEnd(_:)``). The
/// first end wins; any later one is dropped. `cancel()` may come from any thread.
///
/// Thread safety: the mutable state is behind a lock that is never held while the observer runs.
final class ExchangeDelegate: HTTPClientResponseDelegate, IdleSweeper.Exchange {
    typealias Response = Void

    private struct State {
        var task: AsyncHTTPClient.HTTPClient.Task<Void>?
        /// When a byte was last sent or received.
        var lastActivity: NIODeadline
        /// The exchange ended or was cancelled: nothing more is delivered.
        var ended = false
        /// `cancel()` ended it (before `start(_:)`, the task must still be cancelled).
        var cancelled = false
        /// The sweeper watches the exchange.
        var swept = false
        /// Decodes the body, when the head announced gzip or deflate.
        var decoder: ContentDecoder?
        /// The request body bytes written so far.
        var bodySent: Int64 = 0
    }

    private let url: URL
    private let observer: Observer<HTTPResponsePart, any Error>
    private let idleTimeout: TimeAmount?
    /// The transport: its sweeper, its decompression, and the TLS configuration of the probe that
    /// tells why a certificate was rejected. Held for as long as the request runs.
    private let transport: AsyncHTTPClientTransport
    /// The TLS configuration of the rule covering the host, if any (`nil`: the transport's).
    private let ruleTLS: TLSConfiguration?
    /// The request carried its own `Accept-Encoding`: an encoding the transport cannot decode is
    /// then delivered as it is, for the caller who asked for it.
    private let callerChoseEncodings: Bool
    /// Where the request body bytes written are reported, if anyone listens.
    private let bodyProgress: RequestBodyProgress?
    private let state: Locked<State>

    init(
        url: URL,
        observer: Observer<HTTPResponsePart, any Error>,
        idleTimeout: TimeInterval,
        transport: AsyncHTTPClientTransport,
        ruleTLS: TLSConfiguration?,
        callerChoseEncodings: Bool,
        bodyProgress: RequestBodyProgress? = nil
    ) {
        self.url = url
        self.bodyProgress = bodyProgress
        self.observer = observer
        self.transport = transport
        self.ruleTLS = ruleTLS
        self.callerChoseEncodings = callerChoseEncodings
        let idleTimeout = IdleSweeper.silenceAllowed(byTimeoutInterval: idleTimeout)
        self.idleTimeout = idleTimeout
        // Without an idle timeout, activity is never read: no clock read for it.
        state = Locked(State(lastActivity: idleTimeout == nil ? .uptimeNanoseconds(0) : .now()))
    }

    /// Ties the delegate to its task (which `cancel()` and `expire()` act on) and has the sweeper
    /// watch it for silence, unless the exchange already ended: AsyncHTTPClient may have answered,
    /// or failed the request, before `execute` returned.
    func start(_ task: AsyncHTTPClient.HTTPClient.Task<Void>) {
        enum Next { case run, cancel, nothing }
        let watch = idleTimeout != nil
        let next = state.withLock { state -> Next in
            if state.ended { return state.cancelled ? .cancel : .nothing }
            state.task = task
            state.swept = watch
            return .run
        }
        switch next {
        case .cancel:
            task.cancel()
        case .run:
            // An end between the lock above and here finds `swept` set and unregisters first;
            // the sweeper then drops the ended exchange at its next tick (`isIdle` says so).
            if let idleTimeout { transport.sweeper.register(self, timeout: idleTimeout) }
        case .nothing:
            break
        }
    }

    /// The end of `task` from its future: for the ends AsyncHTTPClient does not report to its
    /// delegate (see the type's documentation). Adding the callback from another thread than the
    /// task's loop costs a hop to it, so only those requests pay it.
    func watchTaskEnd(_ task: AsyncHTTPClient.HTTPClient.Task<Void>) {
        task.futureResult.whenComplete { [self] result in
            switch result {
            case .success: end(nil, on: task.eventLoop)
            case .failure(let error): end(error, on: task.eventLoop)
            }
        }
    }

    /// Ends the exchange once: finishes the signal (`error == nil`) or fails it with `error` as a
    /// `URLError`. A later end, or one after `cancel()`, is dropped.
    private func end(_ error: (any Error)?, on loop: any EventLoop) {
        let first = state.withLock { state -> (first: Bool, swept: Bool) in
            guard !state.ended else { return (false, false) }
            state.ended = true
            state.task = nil
            defer { state.swept = false }
            return (true, state.swept)
        }
        guard first.first else { return }
        if first.swept { transport.sweeper.unregister(self) }
        guard let error else {
            observer.finish()
            return
        }
        let failure = ErrorMapping.urlError(error)
        guard failure.code == .serverCertificateUntrusted, let tls = diagnosisTLS else {
            observer.fail(failure)
            return
        }
        // BoringSSL does not say which check failed: a probe reads the certificate's dates.
        CertificateDiagnosis.code(for: url, tls: tls, on: loop).whenSuccess { [observer] code in
            observer.fail(ErrorMapping.urlError(error, code: code))
        }
    }

    /// The TLS configuration of the probe that tells why a certificate was rejected
    /// (``CertificateDiagnosis``): the rule's or the transport's for https, `nil` (no probe) for
    /// http and behind a proxy (the probe connects directly, and must not go around the proxy).
    private var diagnosisTLS: TLSConfiguration? {
        url.scheme?.lowercased() == "https" && !transport.isProxied ? ruleTLS ?? transport.tlsConfiguration : nil
    }

    /// Cancels the request; nothing is delivered afterwards (the observer drops it).
    func cancel() {
        let (task, swept) = state.withLock { state -> (AsyncHTTPClient.HTTPClient.Task<Void>?, Bool) in
            if !state.ended { state.cancelled = true }
            state.ended = true
            defer {
                state.task = nil
                state.swept = false
            }
            return (state.task, state.swept)
        }
        if swept { transport.sweeper.unregister(self) }
        task?.cancel()
    }

    /// Whether nothing was sent or received for the idle timeout; an ended exchange says yes too,
    /// so that the sweeper drops it (its `expire()` does nothing).
    func isIdle(at now: NIODeadline) -> Bool {
        guard let idleTimeout else { return true }
        return state.withLock { state in
            state.ended || state.lastActivity + idleTimeout <= now
        }
    }

    /// Fails the task with `.timedOut` (the sweeper found it idle).
    func expire() {
        guard let idleTimeout, let task = state.withLock({ $0.ended ? nil : $0.task }) else { return }
        let seconds = Double(idleTimeout.nanoseconds) / 1e9
        task.fail(reason: URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The server sent nothing for \(seconds) seconds (the request's timeoutInterval); the request was cancelled.",
            NSURLErrorFailingURLErrorKey: url,
        ]))
    }

    private func touch() {
        guard idleTimeout != nil else { return }
        let now = NIODeadline.now()
        state.withLock { $0.lastActivity = now }
    }

    func didSendRequestPart(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ part: IOData) {
        touch()
        guard let bodyProgress else { return }
        let sent = state.withLock { state in
            state.bodySent += Int64(part.readableBytes)
            return state.bodySent
        }
        bodyProgress.progress(sent, nil)
    }

    func didReceiveHead(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ head: NIOHTTP1.HTTPResponseHead) -> EventLoopFuture<Void> {
        touch()
        switch Self.decoding(head, url: url, decompression: transport.decompression, callerChoseEncodings: callerChoseEncodings) {
        case .success(let (fields, decoder)):
            if let decoder { state.withLock { $0.decoder = decoder } }
            observer.send(.head(Transit.HTTPResponseHead(url: url, statusCode: Int(head.status.code), fields: fields)))
            return task.eventLoop.makeSucceededVoidFuture()
        case .failure(let error):
            return task.eventLoop.makeFailedFuture(error)
        }
    }

    func didReceiveBodyPart(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let decoder: ContentDecoder?
        if idleTimeout != nil {
            let now = NIODeadline.now()
            decoder = state.withLock { state in
                state.lastActivity = now
                return state.decoder
            }
        } else {
            decoder = state.withLock { $0.decoder }
        }
        do {
            try Self.deliver(buffer, decoder: decoder, to: observer) {
                state.withLock { $0.ended }
            }
        } catch {
            return task.eventLoop.makeFailedFuture(error)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: AsyncHTTPClient.HTTPClient.Task<Void>) throws {
        do {
            // A truncated encoded body fails rather than ending as if complete.
            try state.withLock { $0.decoder }?.finish()
        } catch {
            // AsyncHTTPClient fails the task with it without calling `didReceiveError`.
            end(error, on: task.eventLoop)
            throw error
        }
        end(nil, on: task.eventLoop)
    }

    func didReceiveError(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ error: any Error) {
        end(error, on: task.eventLoop)
    }

    /// The fields to deliver for `head`, and the decoder its body needs under `decompression`
    /// (`nil`: the body is delivered as it is); or the error for an encoding the transport cannot
    /// decode, unless the caller asked for encodings itself (it then gets the body as sent).
    static func decoding(
        _ head: NIOHTTP1.HTTPResponseHead,
        url: URL,
        decompression: AsyncHTTPClientTransport.Decompression,
        callerChoseEncodings: Bool
    ) -> Result<(fields: [HTTPField], decoder: ContentDecoder?), URLError> {
        var fields: [HTTPField] = []
        fields.reserveCapacity(head.headers.count)
        var encoded = false
        for (name, value) in head.headers {
            if !encoded, isContentEncoding(name) { encoded = true }
            fields.append(HTTPField(name: name, value: value))
        }
        guard encoded, case .enabled(let maxRatio) = decompression else {
            return .success((fields, nil))
        }
        switch ContentDecoder.coding(for: head.headers[canonicalForm: "Content-Encoding"].joined(separator: ",")) {
        case .success(let coding)?:
            // The delivered body is decoded: these describe the encoded one.
            fields.removeAll { describesEncodedBody($0.name) }
            return .success((fields, ContentDecoder(coding: coding, maxRatio: maxRatio, url: url)))
        case .failure(let unsupported)? where !callerChoseEncodings:
            return .failure(URLError(.cannotDecodeContentData, userInfo: [
                NSLocalizedDescriptionKey: "The response body is encoded as \"\(unsupported.value)\", which AsyncHTTPClientTransport "
                    + "cannot decode (it decodes gzip and deflate). Send your own Accept-Encoding to receive such a body as it is.",
                NSURLErrorFailingURLErrorKey: url,
            ]))
        case .failure?, nil:
            return .success((fields, nil))
        }
    }

    /// Delivers the body chunk `buffer` to `observer`, decoded by `decoder` when there is one:
    /// piece by piece, so a chunk that expands a lot is never whole in memory, and stopping as
    /// soon as `ended()` says the exchange ended (a consumer that cancels, a size limit reached).
    /// Throws the decoder's error.
    static func deliver(
        _ buffer: ByteBuffer,
        decoder: ContentDecoder?,
        to observer: Observer<HTTPResponsePart, any Error>,
        ended: () -> Bool
    ) throws {
        guard buffer.readableBytes > 0 else { return }
        guard let decoder else {
            observer.send(.body(data(buffer)))
            return
        }
        decoder.feed(buffer)
        while let piece = try decoder.next() {
            if ended() { break }
            observer.send(.body(piece))
        }
    }

    /// A body chunk as `Data`: sharing the buffer's storage when the chunk fills at least half of
    /// it (no copy of the bytes: a buffered response of one chunk is then never copied), copied
    /// otherwise, so that a small chunk never keeps a large read buffer alive.
    static func data(_ buffer: ByteBuffer) -> Data {
        if buffer.readableBytes * 2 >= buffer.storageCapacity,
           let shared = buffer.getData(at: buffer.readerIndex, length: buffer.readableBytes, byteTransferStrategy: .noCopy) {
            return shared
        }
        return Data(buffer.readableBytesView)
    }

    /// The header fields as the server sent them: in order, a repeated field once per time it
    /// was sent, names spelled as sent. (No `HTTPURLResponse` is made: on Linux its initialiser
    /// canonicalises every name through `NSString`.)
    static func fields(_ headers: HTTPHeaders) -> [HTTPField] {
        var fields: [HTTPField] = []
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// Whether `name` is `Content-Encoding`, in any case (its bytes compared in place).
    static func isContentEncoding(_ name: String) -> Bool {
        name.utf8.count == 16 && name.utf8.elementsEqual("content-encoding".utf8) { byte, expected in
            (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected
        }
    }

    /// `Content-Encoding` and `Content-Length`, which describe the body as it was sent.
    static func describesEncodedBody(_ name: String) -> Bool {
        name.caseInsensitiveCompare("Content-Encoding") == .orderedSame || name.caseInsensitiveCompare("Content-Length") == .orderedSame
    }
}
