import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Signals
import Tracing
import Transit

/// An ``HTTPTransport`` on AsyncHTTPClient (SwiftNIO): Transit for servers, several times the
/// throughput of `URLSession` on Linux.
///
/// ```swift
/// let client = Transit.HTTPClient(transport: AsyncHTTPClientTransport.shared)
/// ```
///
/// Every subscription to ``exchange(_:)`` executes one request on one long-lived
/// `AsyncHTTPClient.HTTPClient` (its connection pool is shared by every request of the transport)
/// and delivers the response as it arrives: the head as soon as it is parsed, then each body
/// chunk as AsyncHTTPClient reads it (its streaming delegate; nothing is collected), then the end.
/// It keeps every rule of the seam, checked by `TransportConformance` like ``URLSessionTransport``:
///
/// - **Redirects are not followed** (AsyncHTTPClient's are disabled): the 3xx is delivered, and
///   Transit's ``HTTPClient`` follows it by its ``RedirectPolicy``, the same rules as on every
///   transport.
/// - **Cancellation** cancels the AsyncHTTPClient task (its connection is closed); nothing is
///   delivered after it.
/// - **Uploads from a file** (``TransportRequest/bodyFile``) are streamed in 128 KiB reads on
///   NIO's shared thread pool, each read waiting for the previous write: the file is never in
///   memory. The file must not change size while it is sent.
/// - **Upload progress**: each body part AsyncHTTPClient reports written is counted and passed to
///   the request's `bodyProgress` (see `RequestBodyProgress`). Requests to hosts with pinned
///   certificates (the transport's own HTTP/1.1 path) do not report it: their uploads report only
///   the start of each send.
/// - **Idle timeout**: `URLRequest.timeoutInterval` is the longest silence allowed (no byte sent or
///   received), as on `URLSession`; then the request is cancelled and fails with `.timedOut`
///   (checked by one repeating task per transport, at a tenth of the shortest timeout in flight: a
///   request fails within its timeout plus that tick). The silence is counted from the
///   subscription, on both paths: waiting for a connection (when the host's connections are all
///   busy, see `connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit`), connecting and the
///   TLS handshake count, so a burst far larger than the per-host limit can time out requests
///   that were never written; raise the limit or the timeout for such bursts. The total deadline
///   and the size limit are ``HTTPClient``'s.
/// - **Errors** are `URLError`s with the codes `URLSessionTransport` gives for the same failure
///   (the original error is kept under `NSUnderlyingErrorKey`), so retry policies and failover
///   behave the same on both transports:
///
///   | failure (AsyncHTTPClient / NIO error)                                   | `URLError.Code`           |
///   |-------------------------------------------------------------------------|---------------------------|
///   | connection refused or unreachable (`NIOConnectionError`, `ECONNREFUSED`) | `.cannotConnectToHost`    |
///   | host name not found (DNS error in `NIOConnectionError`)                  | `.cannotFindHost`         |
///   | closed or reset mid-response (`remoteConnectionClosed`, `ECONNRESET`, `EPIPE`, `ChannelError.eof`…, a truncated body's `HTTPParserError.invalidEOFState`) | `.networkConnectionLost` |
///   | `timeoutInterval` of silence, `connectTimeout`, `readTimeout`, `writeTimeout`, `deadlineExceeded`, TLS/proxy handshake timeouts | `.timedOut` |
///   | a reply that is not HTTP (any other `HTTPParserError`)                   | `.cannotParseResponse`    |
///   | the server's certificate has expired, or is not yet valid (BoringSSL's `CERTIFICATE_VERIFY_FAILED`, then a second handshake, of at most two seconds and never around a configured proxy, that only reads the certificates' dates; behind a proxy the failure stays `.serverCertificateUntrusted`) | `.serverCertificateHasBadDate`, `.serverCertificateNotYetValid` |
///   | the server's certificate is not trusted otherwise (self-signed, unknown authority or root) | `.serverCertificateUntrusted` |
///   | the certificate is for another host (`NIOSSLExtraError.failedToValidateHostname`) | `.serverCertificateUntrusted` |
///   | another TLS failure (`NIOSSLError`, `BoringSSLError`, `NIOSSLExtraError`) | `.secureConnectionFailed` |
///   | no URL, no host, a URL AsyncHTTPClient cannot parse                      | `.badURL`                 |
///   | a scheme other than `http` or `https`                                    | `.unsupportedURL`         |
///   | the body file is missing or unreadable                                   | `.fileDoesNotExist`, `.cannotOpenFile` |
///   | `cancelled` or `alreadyShutdown` (the transport was shut down)           | `.cancelled`              |
///   | anything else                                                            | `.unknown`                |
///
/// - **Compressed bodies** are decoded as they stream, as on `URLSessionTransport`
///   (``Decompression``): `Accept-Encoding: gzip, deflate` is sent unless the request names its
///   own, and a gzip or deflate (zlib-wrapped or raw) body is delivered decoded, in pieces of at
///   most 64 KiB, so the client's response-size limit counts decoded bytes and bounds memory
///   whatever the compression. The delivered head then has no `Content-Encoding` and no
///   `Content-Length` (they describe the encoded body). A corrupt or truncated stream, one that
///   expands past the ratio limit, or one whose encoded bytes outgrow twice what they decode to
///   by more than 64 KiB (thousands of empty gzip members), fails with `.cannotDecodeContentData`. A `Content-Encoding`
///   the transport cannot decode (`br`, `zstd`, …) fails with `.cannotDecodeContentData` too,
///   unless the request sent its own `Accept-Encoding`: the caller asked for it, and gets the
///   body as it was sent, with its head unchanged. gzip and deflate are decoded whoever asked for
///   them, as `URLSession` does; a caller who wants the encoded bytes turns decoding off
///   (``Decompression/disabled``).
///
/// - **Server trust**: with a ``ServerTrustPolicy`` (`serverTrust:`), a request to a host a rule
///   covers trusts the rule's root certificates in addition to the configuration's (its own
///   `tlsConfiguration`, so a private authority is trusted for that host only); a failed handshake
///   keeps the codes above. A plain `http` request to a covered host fails with
///   ``ServerTrustError`` (``ServerTrustError/Reason/notEncrypted``) before any connection is
///   opened. Other hosts are unaffected.
///
///   **The adapter's own HTTP/1.1 client.** Neither AsyncHTTPClient's configuration nor NIOSSL's
///   `TLSConfiguration` offers a certificate-verification callback (NIOSSL has one only on the
///   TLS handler, which AsyncHTTPClient builds itself), so a request to a host whose rule has
///   **pins** goes over a small HTTP/1.1 client of the adapter's own (SwiftNIO, the same event
///   loops), with the same rules as above: streaming, decoding, idle timeout, cancellation,
///   unfollowed redirects and the error table. It is held to the standard of AsyncHTTPClient's
///   pool, and takes its settings from the same configuration:
///
///   - HTTP/1.1 only, keep-alive: at most `connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit`
///     connections (8 by default) per host, port and rule, open or being opened; further
///     requests wait first come first served, and one cancelled while it waits leaves the queue;
///   - `timeout.connect` (10 s by default) for the TCP connection, and as much again for the TLS
///     handshake; a request that fails, times out or is cancelled while its connection is being
///     opened closes that socket;
///   - a connection is kept only after a complete ordinary response (read to its end, framed by
///     `Content-Length` or chunked, neither side asking to close, not a `101` or a `2xx` to
///     `CONNECT`), at most the same number idle, each closed after `connectionPool.idleTimeout`
///     unused; an idle connection that receives a byte, or that the server closes, is closed and
///     forgotten;
///   - request bodies as data or a file (a body stream fails with `.unsupportedURL`), no proxy
///     (below).
///
///   Its TLS handshake checks the chain the server presents before any byte of the request is
///   written:
///
///   1. the chain is validated in full (swift-certificates' `Verifier`): it must lead to a root the
///      configuration trusts (its `trustRoots`, the system's by default, and its
///      `additionalTrustRoots`) or one of the rule's roots, every certificate within its dates,
///      the leaf naming the host (or its IP address), whatever the configuration's
///      `certificateVerification` says;
///   2. a pin must then match a certificate of the **validated** chain (leaf, intermediates or
///      root); a certificate the server sends that is not part of that chain never matches.
///
///   A chain that validates but matches no pin fails with ``ServerTrustError``
///   (``ServerTrustError/Reason/pinMismatch``). A chain that does not validate fails with the
///   table's codes (`.serverCertificateHasBadDate`, `.serverCertificateNotYetValid`,
///   `.serverCertificateUntrusted` for an unknown authority or another host), with
///   ``ServerTrustError/Reason/untrusted`` under `NSUnderlyingErrorKey`. A request whose reused
///   connection closes (or whose write fails) before any byte of the response arrived is sent
///   once more, on a new connection, when its method is idempotent; otherwise it fails with
///   `.networkConnectionLost` at once. With a proxy in the
///   configuration, a request to a pinned host fails with
///   ``ServerTrustError/Reason/notEnforceable(transport:because:)``: those connections do not go
///   through the proxy.
///
/// Differences from ``URLSessionTransport`` that the seam allows: no cookie storage, no HTTP cache,
/// and HTTP/2 over TLS when the server offers it (pinned hosts: HTTP/1.1).
///
/// Lifetime: the transport owns its AsyncHTTPClient client and its connections to pinned hosts.
/// ``shutdown()`` closes them; releasing
/// the transport shuts it down too (without waiting). A subscription in flight keeps its
/// transport alive until it ends. ``shared`` lives as long as the process.
///
/// Thread safety: `exchange` may be called from any thread; parts are delivered on the request's
/// event loop, which must not be blocked by the consumer.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// A transport on NIO's shared event loops with ``defaultConfiguration``, for the whole process.
    public static let shared = AsyncHTTPClientTransport()

    /// AsyncHTTPClient's default configuration with what the seam requires: redirects disallowed
    /// (Transit follows them) and no retry of failed connection attempts (a refused connection
    /// fails at once with `.cannotConnectToHost`; retrying is Transit's ``RetryPolicy``'s job).
    /// AsyncHTTPClient's no-op tracer is removed (it records nothing, yet each request would build
    /// a span for it); a tracer the application bootstrapped is kept here, and the transport's
    /// initialiser drops it unless its `asyncHTTPClientTracing` is `true`.
    public static var defaultConfiguration: AsyncHTTPClient.HTTPClient.Configuration {
        required(AsyncHTTPClient.HTTPClient.Configuration(), keepingTracer: true)
    }

    /// Whether response bodies are decoded (gzip and deflate), and how far they may expand.
    public enum Decompression: Sendable, Equatable {
        /// Bodies are delivered as the server sent them, and no `Accept-Encoding` is added.
        case disabled
        /// `Accept-Encoding: gzip, deflate` is sent when the request has none, and gzip and
        /// deflate bodies are decoded as they stream; a body whose decoded bytes outgrow
        /// `maxRatio` times its encoded ones (past a small allowance) fails with
        /// `URLError(.cannotDecodeContentData)`.
        case enabled(maxRatio: Int)

        /// Decoding on, with a ratio limit of 100: well above what text and JSON compress to, far
        /// below what a decompression bomb expands to.
        public static let standard = Decompression.enabled(maxRatio: 100)
    }

    /// How response bodies are decoded (``Decompression/standard`` unless the initialiser was given
    /// another).
    public let decompression: Decompression

    /// The AsyncHTTPClient client every request goes through.
    let client: AsyncHTTPClient.HTTPClient
    /// The TLS configuration of its connections (AsyncHTTPClient's default when none was given).
    let tlsConfiguration: TLSConfiguration
    /// Whether the configuration names a proxy: nothing the transport opens itself (a pinned
    /// host's connection, the probe of a certificate failure) may then go around it.
    let isProxied: Bool
    /// Watches every exchange in flight for `timeoutInterval` of silence, with one repeating check.
    let sweeper: IdleSweeper
    /// The server-trust policy given to the initialiser, if any.
    let serverTrust: ServerTrustPolicy?
    /// For each rule of ``serverTrust``: how its requests are sent, or why they are refused.
    private let ruleTLS: [ServerTrustPolicy.Rule: RuleTrust]
    /// The connections of the requests to pinned hosts (the transport's own SwiftNIO path).
    let pinnedConnections: PinnedConnections
    /// Every request goes through the pinned path (https verified by the TLS configuration when
    /// no pinned rule covers its host); for tests of that path.
    private let routesEverythingThroughNIO: Bool
    /// The TLS of an https request on the pinned path that no pinned rule covers (tests only).
    private let unpinnedTLS: PinnedConnections.TLS?
    private let isShutDown = NIOLockedValueBox(false)

    /// Creates a transport with its own AsyncHTTPClient client (and so its own connection pool).
    ///
    /// - Parameters:
    ///   - eventLoopGroup: where connections run; NIO's shared group by default. Pass the group of
    ///     your server (Vapor's, Hummingbird's) to keep everything on its loops.
    ///   - configuration: AsyncHTTPClient's configuration (timeouts, pool size, TLS, proxy,
    ///     trust roots). Its `redirectConfiguration` is replaced by `.disallow`,
    ///     `connectionPool.retryConnectionEstablishment` by `false`, which the seam requires, and
    ///     its `decompression` by `.disabled` (the transport decodes bodies itself).
    ///   - decompression: whether gzip and deflate bodies are decoded, as `URLSessionTransport`
    ///     does (``Decompression/standard`` by default).
    ///   - serverTrust: root certificates and pins per host (see ``ServerTrustPolicy``); none by
    ///     default. A request to a host whose rule has pins goes over the transport's own
    ///     HTTP/1.1 connections, whose TLS handshake validates the server's chain (the
    ///     configuration's trust roots and the rule's) and then matches the pins against the
    ///     validated chain; a failure ends the handshake before any byte of the request is sent.
    ///   - asyncHTTPClientTracing: whether AsyncHTTPClient's own tracer (the configuration's
    ///     `tracing.tracer`, the one the application bootstrapped by default) starts a span for
    ///     each request. `false` by default: on the path this transport uses, AsyncHTTPClient's span
    ///     has no parent and writes no trace header, so with a Transit monitor that traces
    ///     (TransitObservability's) every attempt would get a second, orphan span.
    public convenience init(
        eventLoopGroup: any EventLoopGroup = AsyncHTTPClient.HTTPClient.defaultEventLoopGroup,
        configuration: AsyncHTTPClient.HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration,
        decompression: Decompression = .standard,
        serverTrust: ServerTrustPolicy? = nil,
        asyncHTTPClientTracing: Bool = false
    ) {
        self.init(
            eventLoopGroup: eventLoopGroup,
            configuration: configuration,
            decompression: decompression,
            serverTrust: serverTrust,
            routesEverythingThroughNIO: false,
            asyncHTTPClientTracing: asyncHTTPClientTracing
        )
    }

    /// A transport whose every request goes through the pinned path when
    /// `routesEverythingThroughNIO` is set (plain http included, https verified by the
    /// configuration's TLS unless a pinned rule covers the host): the conformance suite runs on
    /// that path with it.
    init(
        eventLoopGroup: any EventLoopGroup = AsyncHTTPClient.HTTPClient.defaultEventLoopGroup,
        configuration: AsyncHTTPClient.HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration,
        decompression: Decompression = .standard,
        serverTrust: ServerTrustPolicy? = nil,
        routesEverythingThroughNIO: Bool,
        asyncHTTPClientTracing: Bool = false
    ) {
        self.decompression = decompression
        let tlsConfiguration = configuration.tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
        self.tlsConfiguration = tlsConfiguration
        isProxied = configuration.proxy != nil
        self.serverTrust = serverTrust
        ruleTLS = Self.configurations(of: serverTrust, base: tlsConfiguration, proxied: configuration.proxy != nil)
        client = AsyncHTTPClient.HTTPClient(eventLoopGroup: eventLoopGroup, configuration: Self.required(configuration, keepingTracer: asyncHTTPClientTracing))
        sweeper = IdleSweeper(eventLoopGroup: eventLoopGroup)
        pinnedConnections = PinnedConnections(
            eventLoopGroup: eventLoopGroup,
            connectTimeout: configuration.timeout.connect ?? .seconds(10),
            limit: configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit,
            idleTime: configuration.connectionPool.idleTimeout
        )
        self.routesEverythingThroughNIO = routesEverythingThroughNIO
        unpinnedTLS = routesEverythingThroughNIO
            ? (try? NIOSSLContext(configuration: tlsConfiguration)).map { PinnedConnections.TLS(context: $0, verifier: nil) }
            : nil
    }

    deinit {
        if !isShutDown.withLockedValue({ $0 }) {
            // Closes the pools' connections in the background; nothing waits for it.
            client.shutdown().whenComplete { _ in }
            pinnedConnections.shutdown().whenComplete { _ in }
        }
    }

    /// Closes every connection and waits until they are closed. Requests in flight fail with
    /// `.cancelled`; later requests fail at once with `.cancelled`. Calling it again does nothing.
    public func shutdown() async throws {
        let first = isShutDown.withLockedValue { isShutDown in
            defer { isShutDown = true }
            return !isShutDown
        }
        guard first else { return }
        try await pinnedConnections.shutdown().get()
        try await client.shutdown()
    }

    /// What a rule of the server-trust policy makes of its requests.
    private enum RuleTrust {
        /// Sent by AsyncHTTPClient with this TLS configuration (the rule's roots added).
        case configured(TLSConfiguration)
        /// Sent on the pinned path, verified in the handshake.
        case pinned(PinnedConnections.TLS)
        /// Refused, for this reason.
        case refused(ServerTrustError.Reason)
    }

    /// Where a request goes.
    private enum Route {
        /// Through AsyncHTTPClient, with the TLS configuration of a rule (`nil`: the client's).
        case client(TLSConfiguration?)
        /// Through the pinned path, with this TLS (`nil` for plain http) and rule host.
        case pinned(PinnedConnections.TLS?, rule: String?)
    }

    /// The TLS configuration of each rule of `policy`: `base` with the rule's roots added; for a
    /// rule with pins, the context and verifier of the pinned path. With a proxy (`proxied`), rules
    /// with pins are refused: the pinned path connects directly, and must not bypass the proxy.
    private static func configurations(
        of policy: ServerTrustPolicy?,
        base: TLSConfiguration,
        proxied: Bool
    ) -> [ServerTrustPolicy.Rule: RuleTrust] {
        var configurations: [ServerTrustPolicy.Rule: RuleTrust] = [:]
        for rule in policy?.rules ?? [] {
            if proxied, !rule.pins.isEmpty {
                configurations[rule] = .refused(.notEnforceable(
                    transport: "AsyncHTTPClientTransport",
                    because: "pins are checked on the transport's own connections, which do not go through the configured proxy"
                ))
                continue
            }
            do {
                var tls = base
                if !rule.roots.isEmpty {
                    let roots = try rule.roots.map { try NIOSSLCertificate(bytes: Array($0.der), format: .der) }
                    tls.additionalTrustRoots.append(.certificates(roots))
                }
                if rule.pins.isEmpty {
                    configurations[rule] = .configured(tls)
                    continue
                }
                // The verification callback replaces BoringSSL's; it runs only with verification on.
                tls.certificateVerification = .fullVerification
                let verifier: PinVerifier
                do {
                    verifier = try PinVerifier(rule: rule, tls: base)
                } catch {
                    configurations[rule] = .refused(.notEnforceable(
                        transport: "AsyncHTTPClientTransport",
                        because: "swift-certificates cannot read a trusted root certificate"
                    ))
                    continue
                }
                configurations[rule] = .pinned(PinnedConnections.TLS(context: try NIOSSLContext(configuration: tls), verifier: verifier))
            } catch {
                configurations[rule] = .refused(.notEnforceable(
                    transport: "AsyncHTTPClientTransport",
                    because: "NIOSSL cannot read a root certificate of the rule"
                ))
            }
        }
        return configurations
    }

    /// Where a request to `url` goes under the server-trust policy, or the error when it must not
    /// be sent.
    private func route(for url: URL?) -> Result<Route, ServerTrustError> {
        // No policy: every request goes through AsyncHTTPClient, its URL not even looked at.
        guard serverTrust != nil || routesEverythingThroughNIO else { return .success(.client(nil)) }
        let isTLS = url?.scheme?.lowercased() == "https"
        let fallback: Route = routesEverythingThroughNIO ? .pinned(isTLS ? unpinnedTLS : nil, rule: nil) : .client(nil)
        guard let url, let serverTrust, let host = url.host, let rule = serverTrust.rule(for: host) else { return .success(fallback) }
        guard isTLS else {
            return .failure(ServerTrustError(host: host, reason: .notEncrypted))
        }
        switch ruleTLS[rule] {
        case let .configured(tls)?:
            return .success(routesEverythingThroughNIO
                ? .pinned((try? NIOSSLContext(configuration: tls)).map { PinnedConnections.TLS(context: $0, verifier: nil) }, rule: nil)
                : .client(tls))
        case let .pinned(tls)?: return .success(.pinned(tls, rule: rule.host))
        case let .refused(reason)?: return .failure(ServerTrustError(host: host, reason: reason))
        case nil: return .success(fallback)
        }
    }

    /// `configuration` with what the seam requires; its tracer kept only with `keepingTracer`, and
    /// never a no-op one.
    private static func required(
        _ configuration: AsyncHTTPClient.HTTPClient.Configuration,
        keepingTracer: Bool
    ) -> AsyncHTTPClient.HTTPClient.Configuration {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        // A no-op tracer records nothing, but AsyncHTTPClient still builds each request's span
        // and its attributes for it: without a tracer it skips that work.
        if !keepingTracer || configuration.tracing.tracer is NoOpTracer { configuration.tracing.tracer = nil }
        return configuration
    }

    /// A signal that sends `request` when subscribed, and again on every subscription, and
    /// delivers the response as parts (see ``HTTPTransport``).
    ///
    /// Cancelling the subscription cancels the request; no event follows.
    public func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [self] observer in
            var prepared: AsyncHTTPClient.HTTPClient.Request
            let callerChoseEncodings: Bool
            // The configuration of a covered host's rule (its roots added), or nil for the client's.
            let ruleConfiguration: TLSConfiguration?
            switch route(for: request.url) {
            case let .failure(refusal):
                observer.fail(refusal)
                return nil
            case let .success(.pinned(tls, rule)):
                return exchangePinned(request, tls: tls, rule: rule, observer: observer)
            case let .success(.client(tls)):
                ruleConfiguration = tls
            }
            do {
                prepared = try RequestConversion.request(from: request, eventLoopGroup: client.eventLoopGroup)
                prepared.tlsConfiguration = ruleConfiguration
                callerChoseEncodings = prepared.headers.contains(name: "Accept-Encoding")
                if !callerChoseEncodings, decompression != .disabled {
                    prepared.headers.add(name: "Accept-Encoding", value: "gzip, deflate")
                }
            } catch {
                observer.fail(ErrorMapping.urlError(error))
                return nil
            }
            let delegate = ExchangeDelegate(
                url: prepared.url,
                observer: observer,
                idleTimeout: request.timeoutInterval,
                transport: self,
                ruleTLS: ruleConfiguration,
                callerChoseEncodings: callerChoseEncodings,
                bodyProgress: request.bodyProgress
            )
            let hasBody = prepared.body != nil
            let task = client.execute(request: prepared, delegate: delegate, eventLoop: .indifferent)
            delegate.start(task)
            // The delegate hears of every end of the task but two: a failed write of a request
            // body's end, and a client already shut down when `execute` ran (the task then fails
            // at once, with no delegate call). `shutdown()` marks the transport before it shuts
            // the client down, so a client that was not shut down yet is seen here unmarked.
            if hasBody || isShutDown.withLockedValue({ $0 }) {
                delegate.watchTaskEnd(task)
            }
            // The delegate keeps the transport (so its client) alive while the request runs.
            return { delegate.cancel() }
        }
    }

    /// The exchange of `request` on the pinned path.
    private func exchangePinned(
        _ request: TransportRequest,
        tls: PinnedConnections.TLS?,
        rule: String?,
        observer: Observer<HTTPResponsePart, any Error>
    ) -> (@Sendable () -> Void)? {
        if isShutDown.withLockedValue({ $0 }) {
            observer.fail(URLError(.cancelled, userInfo: [NSLocalizedDescriptionKey: "The transport was shut down; the request was cancelled."]))
            return nil
        }
        let prepared: PinnedExchange.Prepared
        do {
            prepared = try PinnedExchange.prepare(request, rule: rule, decompression: decompression)
        } catch {
            observer.fail(ErrorMapping.urlError(error))
            return nil
        }
        if prepared.key.isTLS, tls == nil {
            observer.fail(URLError(.secureConnectionFailed, userInfo: [
                NSLocalizedDescriptionKey: "NIOSSL cannot make a TLS context of the transport's configuration.",
                NSURLErrorFailingURLErrorKey: prepared.url,
            ]))
            return nil
        }
        let exchange = PinnedExchange(
            prepared: prepared,
            tls: tls,
            pool: pinnedConnections,
            observer: observer,
            idleTimeout: request.timeoutInterval,
            sweeper: sweeper,
            decompression: decompression
        )
        exchange.start()
        // Capturing `self` keeps the transport (so its connections) alive while the request runs.
        return { [self] in
            withExtendedLifetime(self) { exchange.cancel() }
        }
    }
}
