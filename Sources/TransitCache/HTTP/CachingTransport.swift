import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The transport decorator behind `transport.caching(in:)`: answers from an ``HTTPCache`` what it
/// may, and stores what it can, following RFC 9111 for a private cache (see
/// ``HTTPTransport/caching(in:)`` for what it does).
struct CachingTransport: HTTPTransport {
    /// The transport requests go to when the cache cannot answer.
    let base: any HTTPTransport
    /// The cache.
    let cache: HTTPCache

    /// The request headers that make a request pass through untouched: the client is validating
    /// or asking for a part itself.
    static let bypassHeaders = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"]

    /// Creates a caching transport in front of `base`.
    init(_ base: any HTTPTransport, cache: HTTPCache) {
        self.base = base
        self.cache = cache
    }

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        let urlRequest = request.urlRequest
        guard let url = urlRequest.url else { return base.exchange(request) }
        let method = (urlRequest.httpMethod ?? "GET").uppercased()
        guard method == "GET" || method == "HEAD" else {
            return invalidating(request, url: url)
        }
        if request.bodyFile != nil || CachingTransport.bypassHeaders.contains(where: { urlRequest.value(forHTTPHeaderField: $0) != nil }) {
            return base.exchange(request)
        }
        let base = self.base
        let cache = self.cache
        return Signal { observer in
            let exchange = CacheExchange(cache: cache, base: base, request: request, url: url, isHead: method == "HEAD", observer: observer)
            cache.records.queue.async { exchange.start() }
            return { exchange.cancel() }
        }
    }

    /// Sends an unsafe request; a success (2xx, 3xx) removes what is stored for its URL and for
    /// `Location` / `Content-Location` on the same origin.
    private func invalidating(_ request: TransportRequest, url: URL) -> Signal<HTTPResponsePart, any Error> {
        let cache = self.cache
        return base.exchange(request).handleEvents(receiveValue: { part in
            guard case .head(let head) = part, (200..<400).contains(head.statusCode) else { return }
            var targets = [url]
            for field in ["Location", "Content-Location"] {
                if let value = head.value(forHTTPHeaderField: field), let target = URL(string: value, relativeTo: url)?.absoluteURL,
                   target.scheme == url.scheme, target.host == url.host, target.port == url.port {
                    targets.append(target)
                }
            }
            for target in targets where cache.invalidate(target) {
                cache.send(.invalidated(target))
            }
        })
    }
}

/// One request through the cache: look up, then serve, revalidate or forward and store.
///
/// Thread safety: the mutable state is behind a `Locked`; events from the base transport arrive
/// serialised (one subscription), and the lookup runs once, on the cache's queue, before the
/// base transport is subscribed.
final class CacheExchange: Sendable {
    private struct State {
        var cancelled = false
        var upstream: CancellationToken?
        var writer: RecordWriter?
        var headSent = false
        /// The head of a 304 answering our conditional request: served at the end of the exchange.
        var notModified: HTTPResponseHead?
    }

    /// Where the exchange's response is stored, and the cache generation the exchange took when
    /// it looked the request up: a response (or a 304's update) commits only if no
    /// ``HTTPCache/removeAll()`` ran since.
    struct Slot {
        let key: String
        /// The request's credential partition (see ``HTTPCache/partition(of:)``).
        let partition: String
        let generation: CacheGeneration
    }

    /// A stored response found for the request, with its open record.
    struct Candidate {
        let stored: StoredResponse
        let record: OpenRecord
    }

    private let cache: HTTPCache
    private let base: any HTTPTransport
    private let request: TransportRequest
    private let url: URL
    private let isHead: Bool
    private let observer: Observer<HTTPResponsePart, any Error>
    private let requestControl: CacheControl
    private let state = Locked(State())

    /// Chunk size for serving stored bodies.
    static let servingChunkSize = 256 * 1024

    init(cache: HTTPCache, base: any HTTPTransport, request: TransportRequest, url: URL, isHead: Bool, observer: Observer<HTTPResponsePart, any Error>) {
        self.cache = cache
        self.base = base
        self.request = request
        self.url = url
        self.isHead = isHead
        self.observer = observer
        let urlRequest = request.urlRequest
        var control = CacheControl(urlRequest.value(forHTTPHeaderField: "Cache-Control"))
        if urlRequest.value(forHTTPHeaderField: "Cache-Control") == nil,
           urlRequest.value(forHTTPHeaderField: "Pragma")?.lowercased().contains("no-cache") == true {
            control.noCache = true
        }
        requestControl = control
    }

    private var now: Int64 { cache.records.configuration.clock.milliseconds }
    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    func cancel() {
        let (upstream, writer) = state.withLock { state -> (CancellationToken?, RecordWriter?) in
            state.cancelled = true
            defer { state.upstream = nil; state.writer = nil }
            return (state.upstream, state.writer)
        }
        upstream?.cancel()
        writer?.discard()
    }

    // MARK: - Lookup

    func start() {
        guard !isCancelled else { return }
        if requestControl.noStore {
            return forward(request, storing: nil, validating: false, fallback: nil)
        }
        // The generation first, before anything is read: a removeAll() from now on keeps what
        // this exchange would store out of the cache — the response it may find below included,
        // which a 304 would otherwise store again from its still-open file.
        let generation = cache.records.generation()
        let partition = cache.partition(of: request)
        let slot = Slot(key: HTTPCache.key(for: url, partition: partition), partition: partition, generation: generation)
        let candidate = lookUp(slot)
        if cache.isOffline {
            if let candidate, usableOffline(candidate.stored) {
                cache.send(.servedOffline(url))
                return serve(candidate.stored, candidate.record)
            }
            cache.send(.offlineMiss(url))
            return observer.fail(URLError(.notConnectedToInternet, userInfo: [
                NSLocalizedDescriptionKey: "Offline, and the cache has no usable response for \(url.absoluteString).",
                NSURLErrorFailingURLErrorKey: url,
            ]))
        }
        guard let candidate else {
            if requestControl.onlyIfCached { return gatewayTimeout() }
            cache.send(.miss(url))
            return forward(request, storing: isHead ? nil : slot, validating: false, fallback: nil)
        }
        if isFresh(candidate.stored) {
            cache.send(.hit(url))
            return serve(candidate.stored, candidate.record)
        }
        if requestControl.onlyIfCached { return gatewayTimeout() }
        guard !isHead, candidate.stored.hasValidators else {
            cache.send(.miss(url))
            return forward(request, storing: isHead ? nil : slot, validating: false, fallback: candidate)
        }
        var conditional = request
        if let etag = candidate.stored.header("ETag") {
            conditional.urlRequest.setValue(etag, forHTTPHeaderField: "If-None-Match")
        }
        if let lastModified = candidate.stored.header("Last-Modified") {
            conditional.urlRequest.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
        }
        forward(conditional, storing: slot, validating: true, fallback: candidate)
    }

    /// The stored response for the request, if its record verifies, decodes, belongs to the
    /// request's credential partition and matches `Vary`.
    private func lookUp(_ slot: Slot) -> Candidate? {
        guard let record = try? cache.records.openRecord(forKey: slot.key, generation: slot.generation),
              let stored = try? JSONDecoder().decode(StoredResponse.self, from: record.metadata),
              stored.partition == slot.partition,
              stored.matches(request.urlRequest, sensitiveHeaders: request.sensitiveHeaders)
        else { return nil }
        return Candidate(stored: stored, record: record)
    }

    /// RFC 9111 §4.2 and §5.2.1: may `stored` be served without contacting the server?
    private func isFresh(_ stored: StoredResponse) -> Bool {
        let control = stored.cacheControl
        if requestControl.noCache || control.noCache { return false }
        let age = stored.currentAge(now: now)
        let lifetime = stored.freshnessLifetime(fraction: cache.heuristicFraction, maximumHeuristic: cache.maximumHeuristicSeconds)
        if let maxAge = requestControl.maxAge, age > Double(maxAge) { return false }
        if let minFresh = requestControl.minFresh, lifetime - age < Double(minFresh) { return false }
        if lifetime > age { return true }
        if let maxStale = requestControl.maxStale, !control.mustRevalidate, age - lifetime <= Double(maxStale) { return true }
        return false
    }

    /// Offline: anything stored, unless it must be revalidated.
    private func usableOffline(_ stored: StoredResponse) -> Bool {
        let control = stored.cacheControl
        if control.noCache || requestControl.noCache { return false }
        if control.mustRevalidate {
            let lifetime = stored.freshnessLifetime(fraction: cache.heuristicFraction, maximumHeuristic: cache.maximumHeuristicSeconds)
            return lifetime > stored.currentAge(now: now)
        }
        return true
    }

    /// `stale-if-error`: is `stored` within the window the response or the request allows?
    private func servableOnError(_ stored: StoredResponse) -> Bool {
        let windows = [requestControl.staleIfError, stored.cacheControl.staleIfError].compactMap { $0 }
        guard let window = windows.max() else { return false }
        let lifetime = stored.freshnessLifetime(fraction: cache.heuristicFraction, maximumHeuristic: cache.maximumHeuristicSeconds)
        return stored.currentAge(now: now) - lifetime <= Double(window)
    }

    // MARK: - Network

    /// Sends `outgoing` to the base transport and passes its parts on, storing them in the slot
    /// `storing` (none: not stored) if the response is storable. `fallback` is the stored
    /// response the request revalidates (`validating`: a 304 is answered with it), or serves on
    /// error.
    private func forward(_ outgoing: TransportRequest, storing: Slot?, validating: Bool, fallback: Candidate?) {
        let token = CancellationToken()
        let proceed = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.upstream = token
            return true
        }
        guard proceed else { return }
        let requestTime = now
        base.exchange(outgoing).observe(Observer { [self] event in
            switch event {
            case .value(.head(let head)):
                receiveHead(head, storing: storing, validating: validating, fallback: fallback, requestTime: requestTime, token: token)
            case .value(.body(let chunk)):
                receiveBody(chunk)
            case .finished:
                finish(fallback: fallback, requestTime: requestTime)
            case .failed(let error):
                fail(error, fallback: fallback)
            }
        }, in: token)
    }

    private func receiveHead(_ head: HTTPResponseHead, storing: Slot?, validating: Bool, fallback: Candidate?, requestTime: Int64, token: CancellationToken) {
        if head.statusCode == 304, validating {
            // Our own conditional request: the stored body answers it, once the exchange ends.
            state.withLock { $0.notModified = head }
            return
        }
        if let fallback, [500, 502, 503, 504].contains(head.statusCode), servableOnError(fallback.stored) {
            token.cancel()
            cache.send(.servedStaleOnError(url))
            return serve(fallback.stored, fallback.record)
        }
        var writer: RecordWriter?
        if let slot = storing, isStorable(head) {
            let stored = StoredResponse(
                url: url, response: head, request: request.urlRequest, requestTime: requestTime, responseTime: now, partition: slot.partition,
                sensitiveHeaders: request.sensitiveHeaders
            )
            do {
                let metadata = try JSONEncoder().encode(stored)
                let limit = cache.records.configuration.effectiveMaximumRecordSize
                if head.expectedContentLength > 0, head.expectedContentLength + Int64(metadata.count) > limit {
                    throw CacheError.recordTooLarge(size: Int(clamping: head.expectedContentLength) + metadata.count, limit: limit)
                }
                writer = try cache.records.makeWriter(
                    forKey: slot.key, ttl: nil, metadata: metadata, expectedSize: nil, generation: slot.generation
                )
            } catch {
                cache.send(.storeFailed(url, error as? CacheError ?? .encodingFailed("\(error)")))
            }
        }
        let cancelled = state.withLock { state -> Bool in
            guard !state.cancelled else { return true }
            state.writer = writer
            state.headSent = true
            return false
        }
        if cancelled {
            writer?.discard()
            return
        }
        observer.send(.head(head))
    }

    private func receiveBody(_ chunk: Data) {
        if let writer = state.withLock({ $0.writer }) {
            do {
                try writer.append(chunk)
            } catch {
                state.withLock { $0.writer = nil }
                writer.discard()
                cache.send(.storeFailed(url, error as? CacheError ?? .writerClosed))
            }
        }
        observer.send(.body(chunk))
    }

    private func finish(fallback: Candidate?, requestTime: Int64) {
        let (writer, notModified) = state.withLock { state -> (RecordWriter?, HTTPResponseHead?) in
            defer { state.writer = nil; state.upstream = nil }
            return (state.writer, state.notModified)
        }
        if let notModified, let fallback {
            let updated = fallback.stored.updated(
                with: notModified, request: request.urlRequest, requestTime: requestTime, responseTime: now, sensitiveHeaders: request.sensitiveHeaders
            )
            restore(updated, body: fallback.record)
            cache.send(.revalidated(url))
            return serve(updated.delivered(afterRevalidationBy: notModified), fallback.record)
        }
        if let writer {
            do {
                try writer.commit()
                cache.send(.stored(url))
            } catch {
                cache.send(.storeFailed(url, error as? CacheError ?? .writerClosed))
            }
        }
        observer.finish()
    }

    private func fail(_ error: any Error, fallback: Candidate?) {
        let (writer, headSent) = state.withLock { state -> (RecordWriter?, Bool) in
            defer { state.writer = nil; state.upstream = nil }
            return (state.writer, state.headSent)
        }
        writer?.discard()
        if !headSent, let fallback, servableOnError(fallback.stored) {
            cache.send(.servedStaleOnError(url))
            return serve(fallback.stored, fallback.record)
        }
        observer.fail(error)
    }

    /// RFC 9111 §3: may this response to a `GET` be stored?
    private func isStorable(_ head: HTTPResponseHead) -> Bool {
        let status = head.statusCode
        guard status >= 200, status != 206, status != 304 else { return false }
        let control = CacheControl(head.value(forHTTPHeaderField: "Cache-Control"))
        guard !control.noStore, !requestControl.noStore else { return false }
        guard !StoredResponse.varyNames(head.value(forHTTPHeaderField: "Vary")).contains("*") else { return false }
        return control.maxAge != nil || head.value(forHTTPHeaderField: "Expires") != nil || control.isPublic || control.isPrivate
            || StoredResponse.heuristicallyCacheable.contains(status)
    }

    /// Stores `updated` with the body of `record` (after a 304). The body is not read again: the
    /// record's payload is copied file to file with its checksum. Nothing is stored if
    /// ``HTTPCache/removeAll()`` ran since the exchange looked the request up (the record's
    /// generation is the exchange's).
    private func restore(_ updated: StoredResponse, body record: OpenRecord) {
        do {
            try cache.records.replaceMetadata(of: record, with: JSONEncoder().encode(updated))
        } catch {
            cache.send(.storeFailed(url, error as? CacheError ?? .encodingFailed("\(error)")))
        }
    }

    // MARK: - Serving

    /// Sends a stored response: its head, with `Age`, then its body in chunks (none for `HEAD`).
    private func serve(_ stored: StoredResponse, _ record: OpenRecord) {
        guard let head = stored.response(for: url, age: stored.currentAge(now: now)) else {
            return observer.fail(URLError(.cannotParseResponse))
        }
        guard !isCancelled else { return }
        observer.send(.head(head))
        if !isHead {
            var offset = 0
            while offset < record.payloadLength {
                guard !isCancelled else { return }
                do {
                    let chunk = try record.readPayload(at: offset, count: CacheExchange.servingChunkSize)
                    observer.send(.body(chunk))
                    offset += chunk.count
                } catch {
                    return observer.fail(error)
                }
            }
        }
        observer.finish()
    }

    /// The answer to `only-if-cached` when nothing stored fits (RFC 9111 §5.2.1.7).
    private func gatewayTimeout() {
        observer.send(.head(HTTPResponseHead(url: url, statusCode: 504, headerFields: ["Content-Length": "0"])))
        observer.finish()
    }
}
