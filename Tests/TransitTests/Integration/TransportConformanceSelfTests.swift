import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitTesting

/// The conformance suite catches what it claims to: each broken transport here (a decorator over
/// `URLSessionTransport` with one defect) fails the check named for that defect, with a message
/// that says what went wrong. Waits are bounded at 2 s, so each test fails its check fast.
@Suite("TransportConformance catches broken transports")
struct TransportConformanceSelfTests {
    private static func session() -> URLSessionTransport {
        URLSessionTransport(configuration: .ephemeral)
    }

    /// Runs the check `name` against `transport` and returns its failure.
    private func failure(of name: String, on transport: some HTTPTransport) async throws -> ConformanceFailure {
        let check = try #require(TransportConformance.checks.first { $0.name == name })
        do {
            try await check.run(eventTimeout: .seconds(2)) { transport }
        } catch let failure as ConformanceFailure {
            #expect(failure.check == name)
            return failure
        }
        Issue.record("the check \(name) passed a transport that breaks it")
        return ConformanceFailure(check: name, message: "")
    }

    @Test func aTransportThatBuffersTheBodyFailsStreamingOrder() async throws {
        let failure = try await failure(of: "streaming order", on: BufferingTransport(inner: Self.session()))
        // Either the 2 s wait for the head ran out, or — when a loaded run (the thread sanitizer
        // on two cores) starved that wait past the session's own 60 s idle timeout — the
        // exchange ended before any head: both say the head was held back.
        #expect(failure.message.contains("no head within") || failure.message.contains("ended without a head"), "\(failure.message)")
    }

    @Test func aTransportWithItsOwnErrorsFailsTheErrorChecks() async throws {
        let transport = UnmappedErrorsTransport(inner: Self.session())
        let lost = try await failure(of: "closed mid-body", on: transport)
        #expect(lost.message.contains("expected URLError(.networkConnectionLost"))
        let refused = try await failure(of: "connection refused", on: transport)
        #expect(refused.message.contains("expected URLError(.cannotConnectToHost"))
    }

    @Test func aTransportThatSendsEmptyChunksBreaksThePartContract() async throws {
        let failure = try await failure(of: "chunked body", on: EmptyChunkTransport(inner: Self.session()))
        #expect(failure.message.contains("an empty body chunk"))
    }

    @Test func aTransportThatDoesNotCancelItsRequestFailsCancellation() async throws {
        let leaked = LeakedSubscriptions()
        let failure = try await failure(of: "cancel mid-body", on: UncancellableTransport(inner: Self.session(), leaked: leaked))
        #expect(failure.message.contains("did not see the connection closed"))
        leaked.cancelAll()
    }
}

/// Holds the whole response back and delivers it at the end.
private struct BufferingTransport: HTTPTransport {
    let inner: any HTTPTransport
    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        inner.exchange(request).collect().flatMap { Signal(sequence: $0) }
    }
}

/// Fails with `.unknown` whatever happened.
private struct UnmappedErrorsTransport: HTTPTransport {
    let inner: any HTTPTransport
    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        inner.exchange(request).mapError { _ in URLError(.unknown) }
    }
}

/// Sends an empty chunk before every chunk.
private struct EmptyChunkTransport: HTTPTransport {
    let inner: any HTTPTransport
    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        inner.exchange(request).flatMap { part -> Signal<HTTPResponsePart, any Error> in
            if case .body = part { return Signal(sequence: [.body(Data()), part]) }
            return Signal(value: part)
        }
    }
}

/// Stops delivering on cancel but leaves the request running.
private struct UncancellableTransport: HTTPTransport {
    let inner: any HTTPTransport
    let leaked: LeakedSubscriptions
    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [inner, leaked] observer in
            leaked.keep(inner.exchange(request).observe(observer))
            return nil
        }
    }
}

/// Keeps subscriptions alive past their cancellation, until the test ends them.
private final class LeakedSubscriptions: Sendable {
    private let tokens = Locked<[CancellationToken]>([])
    func keep(_ token: CancellationToken) { tokens.withLock { $0.append(token) } }
    func cancelAll() {
        let tokens = tokens.withLock { tokens in
            defer { tokens = [] }
            return tokens
        }
        tokens.forEach { $0.cancel() }
    }
}
