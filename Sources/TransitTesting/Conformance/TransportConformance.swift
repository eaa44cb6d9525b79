import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// What every `HTTPTransport` must do, written once and run against each transport over real
/// sockets (``LoopbackServer``s on 127.0.0.1).
///
/// Each ``Check`` is an async function that takes a factory of the transport under test, starts
/// its own servers, and throws an error whose description names the check and says what was
/// expected and what happened. The suite depends on no test framework; with Swift Testing, one test per check:
///
/// ```swift
/// @Test(arguments: TransportConformance.checks)
/// func conforms(_ check: TransportConformance.Check) async throws {
///     try await check.run { MyTransport() }
/// }
/// ```
///
/// The checks, by ``Check/name``:
/// - the exchange itself: status codes, request and response headers (repeated, odd, long),
///   empty, large, chunked and close-delimited bodies, the head delivered before the body is sent
///   and each chunk as it arrives, 3xx delivered unfollowed, uploads from a file, a cold and
///   repeatable signal, 32 concurrent requests;
/// - cancellation before the head and mid-body (the server sees the connection closed; nothing is
///   delivered after the cancel);
/// - the same `URLError` codes on every transport: a connection closed, reset or dropped →
///   `.networkConnectionLost`, refused → `.cannotConnectToHost`, a stalled server →
///   `.timedOut` after `URLRequest.timeoutInterval` of silence (a slow but steady body does not
///   time out), a reply that is not HTTP → `.cannotParseResponse`, no URL → `.badURL`;
/// - authentication challenges: a 401 or 407 with any challenge (Basic, Digest, Bearer, an
///   unknown scheme) is delivered promptly as a response, with no credential sent and no second
///   request, to the transport and through an `HTTPClient` (buffered, streamed, downloaded);
/// - through an `HTTPClient` over the transport: the response-size limit, the total deadline
///   against a trickling server, and redirects across two servers with credentials dropped.
///
/// Wall-clock waits are bounded (the `eventTimeout` of ``Check/run(eventTimeout:_:)``, 30 s by
/// default) and every wait is on a real condition (a part arriving, a server reaching a
/// ``LoopbackGate``, a connection closing), never a sleep. The idle-timeout checks take about two seconds each, by nature.
public enum TransportConformance {
    /// Makes the transport under test.
    typealias MakeTransport = @Sendable () async throws -> any HTTPTransport

    /// One named behaviour every transport must have.
    public struct Check: Sendable, CustomStringConvertible {
        /// A short name, unique in ``TransportConformance/checks``.
        public let name: String
        /// What the check proves.
        public let summary: String
        let body: @Sendable (MakeTransport) async throws -> Void

        init(_ name: String, _ summary: String, _ body: @escaping @Sendable (MakeTransport) async throws -> Void) {
            self.name = name
            self.summary = summary
            self.body = body
        }

        /// Runs the check against transports made by `makeTransport`.
        ///
        /// - Parameters:
        ///   - eventTimeout: how long the check waits for something that must happen (a part,
        ///     the end, a connection closing) before it fails: generous by default, so that a
        ///     loaded CI machine passes, and finite, so that a transport that never answers fails
        ///     instead of hanging.
        ///   - makeTransport: makes the transport under test; called once or more per check, each
        ///     call may return the same transport or a new one.
        /// - Throws: an error whose description names this check and says what was expected and
        ///   what happened, if the transport does not behave; any other error (a server that
        ///   cannot start) is reported the same way.
        public func run(
            eventTimeout: Duration = .seconds(30),
            _ makeTransport: @escaping @Sendable () async throws -> any HTTPTransport
        ) async throws {
            do {
                try await TransportConformance.$eventTimeout.withValue(eventTimeout) {
                    try await body(makeTransport)
                }
            } catch var failure as ConformanceFailure {
                failure.check = name
                throw failure
            } catch {
                throw ConformanceFailure(check: name, message: "unexpected error: \(describe(error))")
            }
        }

        /// The check's ``name``, which names a test run per check.
        public var description: String { name }
    }

    /// How long a check waits for something that must happen: the `eventTimeout` of
    /// ``Check/run(eventTimeout:_:)``, bound for the check's task.
    @TaskLocal static var eventTimeout: Duration = .seconds(30)

    /// Every check, in a stable order; `checks.first { $0.name == name }` finds one by name.
    public static let checks: [Check] = exchangeChecks + failureChecks + challengeChecks + encodingChecks + clientChecks
}
