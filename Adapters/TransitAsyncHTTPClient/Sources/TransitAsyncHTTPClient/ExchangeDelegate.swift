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
import Transit

/// Receives one AsyncHTTPClient request's response and delivers it as ``HTTPResponsePart``s; is
/// swept for `URLRequest.timeoutInterval` of silence by its transport's ``IdleSweeper``.
///
/// The head and body callbacks run on the task's event loop, one at a time; the end comes from
/// the task's future (which also fails when the task could not even start). `cancel()` may come
/// from any thread. Thread safety: the mutable state is behind a lock that is never held while
/// the observer runs.
final class ExchangeDelegate: HTTPClientResponseDelegate, IdleSweeper.Exchange {
    typealias Response = Void

    private struct State {
        var task: AsyncHTTPClient.HTTPClient.Task<Void>?
        /// When a byte was last sent or received.
        var lastActivity: NIODeadline
        /// The exchange ended or was cancelled.
        var ended = false
        /// Decodes the body, when the head announced gzip or deflate.
        var decoder: ContentDecoder?
    }

    private let url: URL
    private let observer: Observer<HTTPResponsePart, any Error>
    private let idleTimeout: TimeAmount?
    private let sweeper: IdleSweeper
    private let state: NIOLockedValueBox<State>
    private let decompression: AsyncHTTPClientTransport.Decompression
    /// The request carried its own `Accept-Encoding`: an encoding the transport cannot decode is
    /// then delivered as it is, for the caller who asked for it.
    private let callerChoseEncodings: Bool
    /// The TLS configuration of the transport, for a probe that tells why a certificate was
    /// rejected (``CertificateDiagnosis``); `nil` for no probe.
    private let diagnosisTLS: TLSConfiguration?

    init(
        url: URL,
        observer: Observer<HTTPResponsePart, any Error>,
        idleTimeout: TimeInterval,
        sweeper: IdleSweeper,
        decompression: AsyncHTTPClientTransport.Decompression = .disabled,
        callerChoseEncodings: Bool = false,
        diagnosisTLS: TLSConfiguration? = nil
    ) {
        self.url = url
        self.diagnosisTLS = diagnosisTLS
        self.decompression = decompression
        self.callerChoseEncodings = callerChoseEncodings
        self.observer = observer
        self.sweeper = sweeper
        self.idleTimeout = IdleSweeper.silenceAllowed(byTimeoutInterval: idleTimeout)
        state = NIOLockedValueBox(State(lastActivity: .now()))
    }

    /// Ties the delegate to its task: the end of the task ends the signal, and the sweeper starts
    /// watching it for silence.
    func start(_ task: AsyncHTTPClient.HTTPClient.Task<Void>) {
        let proceed = state.withLockedValue { state -> Bool in
            guard !state.ended else { return false }
            state.task = task
            return true
        }
        guard proceed else {
            task.cancel()
            return
        }
        if let idleTimeout { sweeper.register(self, timeout: idleTimeout) }
        task.futureResult.whenComplete { [self] result in
            state.withLockedValue { state in
                state.ended = true
                state.task = nil
            }
            if idleTimeout != nil { sweeper.unregister(self) }
            switch result {
            case .success:
                observer.finish()
            case .failure(let error):
                let failure = ErrorMapping.urlError(error)
                guard failure.code == .serverCertificateUntrusted, let tls = diagnosisTLS else {
                    observer.fail(failure)
                    return
                }
                // BoringSSL does not say which check failed: a probe reads the certificate's dates.
                CertificateDiagnosis.code(for: url, tls: tls, on: task.eventLoop).whenSuccess { [observer] code in
                    observer.fail(ErrorMapping.urlError(error, code: code))
                }
            }
        }
    }

    /// Cancels the request; nothing is delivered afterwards (the observer drops it).
    func cancel() {
        let task = state.withLockedValue { state -> AsyncHTTPClient.HTTPClient.Task<Void>? in
            state.ended = true
            defer { state.task = nil }
            return state.task
        }
        if idleTimeout != nil { sweeper.unregister(self) }
        task?.cancel()
    }

    /// Whether nothing was sent or received for the idle timeout (an ended exchange never is).
    func isIdle(at now: NIODeadline) -> Bool {
        guard let idleTimeout else { return false }
        return state.withLockedValue { state in
            !state.ended && state.task != nil && state.lastActivity + idleTimeout <= now
        }
    }

    /// Fails the task with `.timedOut` (the sweeper found it idle).
    func expire() {
        guard let idleTimeout, let task = state.withLockedValue({ $0.ended ? nil : $0.task }) else { return }
        let seconds = Double(idleTimeout.nanoseconds) / 1e9
        task.fail(reason: URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The server sent nothing for \(seconds) seconds (the request's timeoutInterval); the request was cancelled.",
            NSURLErrorFailingURLErrorKey: url,
        ]))
    }

    private func touch() {
        guard idleTimeout != nil else { return }
        let now = NIODeadline.now()
        state.withLockedValue { $0.lastActivity = now }
    }

    func didSendRequestPart(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ part: IOData) {
        touch()
    }

    func didReceiveHead(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ head: NIOHTTP1.HTTPResponseHead) -> EventLoopFuture<Void> {
        touch()
        switch Self.decoding(head, url: url, decompression: decompression, callerChoseEncodings: callerChoseEncodings) {
        case .success(let (fields, decoder)):
            if let decoder { state.withLockedValue { $0.decoder = decoder } }
            observer.send(.head(Transit.HTTPResponseHead(url: url, statusCode: Int(head.status.code), fields: fields)))
            return task.eventLoop.makeSucceededVoidFuture()
        case .failure(let error):
            return task.eventLoop.makeFailedFuture(error)
        }
    }

    func didReceiveBodyPart(task: AsyncHTTPClient.HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        touch()
        do {
            try Self.deliver(buffer, decoder: state.withLockedValue { $0.decoder }, to: observer) {
                state.withLockedValue { $0.ended }
            }
        } catch {
            return task.eventLoop.makeFailedFuture(error)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: AsyncHTTPClient.HTTPClient.Task<Void>) throws {
        // A truncated encoded body fails rather than ending as if complete.
        try state.withLockedValue { $0.decoder }?.finish()
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
        var fields = fields(head.headers)
        guard case .enabled(let maxRatio) = decompression, head.headers.contains(name: "Content-Encoding") else {
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
    /// canonicalises every name through `NSString`, about 20 µs a response.)
    static func fields(_ headers: HTTPHeaders) -> [HTTPField] {
        var fields: [HTTPField] = []
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// `Content-Encoding` and `Content-Length`, which describe the body as it was sent.
    static func describesEncodedBody(_ name: String) -> Bool {
        name.caseInsensitiveCompare("Content-Encoding") == .orderedSame || name.caseInsensitiveCompare("Content-Length") == .orderedSame
    }
}
