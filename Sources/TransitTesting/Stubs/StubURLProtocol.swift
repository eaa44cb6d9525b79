import Foundation
import Signals
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Transit

/// A `URLProtocol` that answers `URLSession` requests with canned responses, without any
/// network: to test code that owns a `URLSession` (such as `URLSessionTransport`) on Linux and
/// Apple platforms alike.
///
/// Stubs live in a ``Registry`` and answer with ``StubResponse`` values, as those of a
/// ``StubTransport`` do, except that this protocol has no scheduler: an answer that is delayed
/// (``StubResponse/delayed(by:)``) or paced
/// (``StubResponse/chunks(_:status:headers:every:thenFail:)`` with an interval) fails the load
/// with `URLError(.resourceUnavailable)` saying so. A session answers from the registry whose
/// ``Registry/configuration(basedOn:)`` it was built with:
///
/// ```swift
/// let stubs = StubURLProtocol.Registry()
/// stubs.stub(.get, path: "/posts").thenRespond(.json(#"[{"id":1}]"#))
/// let transport = URLSessionTransport(configuration: stubs.configuration())
/// // … send requests …
/// #expect(stubs.requests.map(\.url?.path) == ["/posts"])
/// ```
///
/// **Isolation between concurrent tests.** `URLProtocol` registration is per class, and
/// `URLSession` shows a protocol only the request (not the session or its configuration, whose
/// `httpAdditionalHeaders` are not visible to protocols on Linux). So every registry gets a
/// protocol class of its own — a distinct generic specialisation of `StubURLProtocol` — and its
/// configuration registers that class. Two tests running at once, each with its registry, can
/// never see each other's stubs or requests, whatever URLs they use.
///
/// Every request a registry's session sends is answered by the registry, never by the network:
/// a request no stub matches fails with `URLError(.resourceUnavailable)` whose description names
/// the request. Registering `StubURLProtocol.self` directly (without a registry) answers every
/// request with that error too.
///
/// Thread safety: the registry's state is behind a `Locked`; stubs may be added while requests
/// run.
public class StubURLProtocol: URLProtocol {
    /// A set of stubs, the requests they received, and the `URLProtocol` class that serves them.
    /// Make one per test.
    ///
    /// Its stubs (``RequestStubs``: ``RequestStubs/stub(matching:)``,
    /// ``RequestStubs/stub(_:path:)``, ``RequestStubs/requests``)
    /// are those of a ``StubTransport`` and take the same ``StubResponse`` answers. Recorded
    /// requests have their body in `httpBody` even when the session handed over a stream.
    public final class Registry: RequestStubs, @unchecked Sendable {
        private let stopped = Locked(0)
        /// The `URLProtocol` class that answers from this registry (and only from it). Put it in
        /// `URLSessionConfiguration.protocolClasses`, or use ``configuration(basedOn:)``.
        package let protocolClass: AnyClass

        /// Creates an empty registry with a protocol class of its own.
        override public init() {
            protocolClass = StubURLProtocol.register()
            super.init()
            StubURLProtocol.bind(protocolClass, to: self)
        }

        deinit {
            StubURLProtocol.unbind(protocolClass)
        }

        /// A copy of `base` whose sessions are answered by this registry: its protocol class
        /// comes first in `protocolClasses`.
        public func configuration(basedOn base: URLSessionConfiguration = .ephemeral) -> URLSessionConfiguration {
            let configuration = base.copy() as! URLSessionConfiguration
            configuration.protocolClasses = [protocolClass] + (base.protocolClasses ?? [])
            return configuration
        }

        /// How many loads were stopped (cancelled) before they answered — a ``StubResponse/pending``
        /// request whose task was cancelled, for instance.
        public var stoppedRequestCount: Int {
            stopped.withLock { $0 }
        }

        func recordStop() {
            stopped.withLock { $0 += 1 }
        }
    }

    // MARK: - Registry lookup

    private struct Bindings: Sendable {
        var registries: [ObjectIdentifier: WeakRegistry] = [:]
        var nextIndex = 1
    }

    private struct WeakRegistry: Sendable {
        weak var registry: Registry?
    }

    private static let bindings = Locked(Bindings())

    /// A protocol class never handed out before. Indices are not reused, so a session that
    /// outlives its registry can never be answered by a newer one.
    fileprivate static func register() -> AnyClass {
        let index = bindings.withLock { bindings -> Int in
            defer { bindings.nextIndex += 1 }
            return bindings.nextIndex
        }
        return StubURLProtocolTags.protocolClass(for: index)
    }

    fileprivate static func bind(_ protocolClass: AnyClass, to registry: Registry) {
        bindings.withLock { $0.registries[ObjectIdentifier(protocolClass)] = WeakRegistry(registry: registry) }
    }

    fileprivate static func unbind(_ protocolClass: AnyClass) {
        _ = bindings.withLock { $0.registries.removeValue(forKey: ObjectIdentifier(protocolClass)) }
    }

    private static func registry(for protocolClass: AnyClass) -> Registry? {
        bindings.withLock { $0.registries[ObjectIdentifier(protocolClass)]?.registry }
    }

    // MARK: - URLProtocol

    private let answered = Locked(false)

    /// Every request is answered by the stubs: nothing reaches the network.
    override public class func canInit(with request: URLRequest) -> Bool {
        true
    }

    /// The request unchanged.
    override public class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Records the request and answers it from the class's registry.
    override public func startLoading() {
        var recorded = request
        if recorded.httpBody == nil, let stream = recorded.httpBodyStream {
            recorded.httpBody = Self.read(stream)
        }
        guard let registry = Self.registry(for: type(of: self)) else {
            finish(.failure(Self.unexpected(recorded, reason: "no StubURLProtocol.Registry serves this session; build it with registry.configuration()")), for: recorded)
            return
        }
        guard let stub = registry.record(recorded), let answer = stub.nextAnswer() else {
            finish(.failure(Self.unexpected(recorded, reason: "no stub matches it; add one")), for: recorded)
            return
        }
        let response = answer(recorded)
        guard !response.needsScheduler else {
            finish(.failure(Self.unexpected(recorded, reason: "its stub's answer is delayed or paced, and StubURLProtocol answers at once; use StubTransport with a TestScheduler for timed answers")), for: recorded)
            return
        }
        finish(response, for: recorded)
    }

    /// Counts a cancelled load that had not been answered.
    override public func stopLoading() {
        let wasAnswered = answered.withLock { $0 }
        if !wasAnswered, let registry = Self.registry(for: type(of: self)) {
            registry.recordStop()
        }
    }

    private func finish(_ response: StubResponse, for request: URLRequest) {
        guard let client, let url = request.url else { return }
        var errorAfterBody: (any Error)?
        switch response.outcome {
        case .pending:
            return
        case .failure(let error):
            answered.withLock { $0 = true }
            client.urlProtocol(self, didFailWithError: error)
            return
        case .nonHTTP(let mimeType, let body):
            answered.withLock { $0 = true }
            let plain = URLResponse(url: url, mimeType: mimeType, expectedContentLength: body.count, textEncodingName: nil)
            client.urlProtocol(self, didReceive: plain, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty { client.urlProtocol(self, didLoad: body) }
        case .http(let status, let headers, let chunks, _, let failure):
            answered.withLock { $0 = true }
            guard let http = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers) else {
                client.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
                return
            }
            client.urlProtocol(self, didReceive: http, cacheStoragePolicy: .notAllowed)
            for chunk in chunks { client.urlProtocol(self, didLoad: chunk) }
            errorAfterBody = failure
        }
        if let errorAfterBody {
            client.urlProtocol(self, didFailWithError: errorAfterBody)
        } else {
            client.urlProtocolDidFinishLoading(self)
        }
    }

    private static func unexpected(_ request: URLRequest, reason: String) -> URLError {
        URLError(.resourceUnavailable, userInfo: [
            NSLocalizedDescriptionKey: "StubURLProtocol: unexpected request \(request.httpMethod ?? "GET") \(request.url?.redactedForLogging ?? "<no URL>"): \(reason)",
        ])
    }

    private static func read(_ stream: InputStream) -> Data {
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(buffer, count: count)
        }
        return data
    }
}

/// Builds a distinct `StubURLProtocol` subclass for every registry index, as a generic
/// specialisation whose type argument spells the index in binary (`One<Zero<End>>` is 2).
/// Specialisations are distinct classes to both the Swift and the Objective-C runtime.
enum StubURLProtocolTags {
    enum End {}
    enum Zero<Next> {}
    enum One<Next> {}

    final class Slot<Tag>: StubURLProtocol {}

    static func protocolClass(for index: Int) -> AnyClass {
        build(End.self, index)
    }

    private static func build<Tag>(_: Tag.Type, _ remaining: Int) -> AnyClass {
        if remaining == 0 { return Slot<Tag>.self }
        return remaining & 1 == 0 ? build(Zero<Tag>.self, remaining >> 1) : build(One<Tag>.self, remaining >> 1)
    }
}
