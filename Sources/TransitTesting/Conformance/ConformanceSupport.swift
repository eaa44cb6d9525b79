import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// Why a transport failed a conformance check: its description names the check and says what was
/// expected and what happened.
package struct ConformanceFailure: Error, CustomStringConvertible, Sendable {
    /// The name of the check that failed (see ``TransportConformance/Check/name``).
    package var check: String
    /// What went wrong, with the values seen.
    package var message: String

    /// Creates a failure.
    init(check: String, message: String) {
        self.check = check
        self.message = message
    }

    /// `check: message`, or the message alone outside a check.
    package var description: String {
        check.isEmpty ? message : "\(check): \(message)"
    }
}

/// Throws a ``ConformanceFailure`` with `message` unless `condition` holds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ConformanceFailure(check: "", message: message()) }
}

/// Throws unless `actual == expected`, naming `what` and both values.
func requireEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String) throws {
    if actual != expected {
        throw ConformanceFailure(check: "", message: "\(what): expected \(expected), got \(actual)")
    }
}

/// The bounds of every real-time wait in the checks (see `TransportConformance.eventTimeout`).
enum ConformanceTimeout {
    static var event: Duration { TransportConformance.eventTimeout }
}

/// Records the parts one transport subscription delivers, checking the event contract as they
/// arrive (one head first, no empty chunk, nothing after the end, nothing after a cancel), and
/// lets a check wait for a point in the exchange.
final class PartRecorder: Sendable {
    private struct State {
        var head: HTTPResponseHead?
        var chunks: [Data] = []
        var byteCount = 0
        var completion: Completion<any Error>?
        /// When the terminal event was delivered (on the transport's thread, whatever the test's
        /// own task is waiting for).
        var endedAt: ContinuousClock.Instant?
        var violations: [String] = []
        var cancelled = false
        var eventsAfterCancel = 0
        var token: CancellationToken?
    }

    private let state = Locked(State())
    private let changes = AsyncCondition()
    let label: String

    /// Subscribes to `signal` at once; the recorder keeps the subscription until ``cancel()``.
    init(_ signal: Signal<HTTPResponsePart, any Error>, label: String = "the exchange") {
        self.label = label
        let token = signal.observe(Observer { [self] event in record(event) })
        let cancelled = state.withLock { state -> Bool in
            if state.completion == nil, !state.cancelled { state.token = token }
            return state.cancelled
        }
        if cancelled { token.cancel() }
    }

    private func record(_ event: Event<HTTPResponsePart, any Error>) {
        state.withLock { state in
            if state.cancelled {
                state.eventsAfterCancel += 1
                return
            }
            if state.completion != nil {
                state.violations.append("an event after the end: \(event)")
                return
            }
            switch event {
            case .value(.head(let head)):
                if state.head != nil { state.violations.append("a second head (status \(head.statusCode))") }
                if !state.chunks.isEmpty { state.violations.append("a head after body chunks") }
                state.head = state.head ?? head
            case .value(.body(let data)):
                if state.head == nil { state.violations.append("a body chunk before the head") }
                if data.isEmpty { state.violations.append("an empty body chunk") }
                state.chunks.append(data)
                state.byteCount += data.count
            case .finished:
                if state.head == nil { state.violations.append("finished without a head") }
                state.completion = .finished
                state.endedAt = ContinuousClock.now
                state.token = nil
            case .failed(let error):
                state.completion = .failure(error)
                state.endedAt = ContinuousClock.now
                state.token = nil
            }
        }
        changes.signal()
    }

    /// Cancels the subscription; any event delivered afterwards is counted in
    /// ``eventsAfterCancel``.
    func cancel() {
        let token = state.withLock { state -> CancellationToken? in
            state.cancelled = true
            defer { state.token = nil }
            return state.token
        }
        token?.cancel()
    }

    var head: HTTPResponseHead? { state.withLock { $0.head } }
    var chunks: [Data] { state.withLock { $0.chunks } }
    var body: Data { state.withLock { $0.chunks.reduce(into: Data()) { $0.append($1) } } }
    var byteCount: Int { state.withLock { $0.byteCount } }
    var completion: Completion<any Error>? { state.withLock { $0.completion } }
    var endedAt: ContinuousClock.Instant? { state.withLock { $0.endedAt } }
    var eventsAfterCancel: Int { state.withLock { $0.eventsAfterCancel } }

    /// Throws if the transport broke the event contract.
    func requireNoViolations() throws {
        let violations = state.withLock { $0.violations }
        try require(violations.isEmpty, "\(label) broke the part contract: \(violations.joined(separator: "; "))")
    }

    /// Waits until `condition` holds on the recorder; throws (naming `what`) after `timeout`.
    private func wait(for what: String, timeout: Duration, _ condition: @escaping () -> Bool) async throws {
        let met = await changes.waitUntil(timeout: timeout, condition)
        try require(met, "\(label): no \(what) within \(timeout) (so far: \(summary))")
    }

    /// Waits for the head.
    @discardableResult
    func waitForHead(timeout: Duration = ConformanceTimeout.event) async throws -> HTTPResponseHead {
        try await wait(for: "head", timeout: timeout) { [self] in head != nil || completion != nil }
        guard let head else { throw ConformanceFailure(check: "", message: "\(label) ended without a head: \(summary)") }
        return head
    }

    /// Waits until at least `count` body bytes arrived.
    func waitForBody(atLeast count: Int, timeout: Duration = ConformanceTimeout.event) async throws {
        try await wait(for: "\(count) body bytes", timeout: timeout) { [self] in byteCount >= count || completion != nil }
        try require(byteCount >= count, "\(label) ended after \(byteCount) of \(count) expected body bytes: \(summary)")
    }

    /// Waits for the terminal event.
    @discardableResult
    func waitForEnd(timeout: Duration = ConformanceTimeout.event) async throws -> Completion<any Error> {
        try await wait(for: "end", timeout: timeout) { [self] in completion != nil }
        try requireNoViolations()
        return completion!
    }

    /// Waits for the end and requires that it is `finished`; returns the head and the whole body.
    func waitForSuccess(timeout: Duration = ConformanceTimeout.event) async throws -> (head: HTTPResponseHead, body: Data) {
        let completion = try await waitForEnd(timeout: timeout)
        if case .failure(let error) = completion {
            throw ConformanceFailure(check: "", message: "\(label) failed with \(describe(error)); expected a response")
        }
        guard let head else { throw ConformanceFailure(check: "", message: "\(label) finished without a head") }
        return (head, body)
    }

    /// Waits for the end and requires a `URLError` with `code`.
    func waitForFailure(_ code: URLError.Code, timeout: Duration = ConformanceTimeout.event) async throws {
        let completion = try await waitForEnd(timeout: timeout)
        guard case .failure(let error) = completion else {
            throw ConformanceFailure(check: "", message: "\(label) finished (status \(head?.statusCode ?? 0), \(byteCount) bytes); expected URLError(\(describe(code)))")
        }
        try require(urlErrorCode(of: error) == code, "\(label) failed with \(describe(error)); expected URLError(\(describe(code)))")
    }

    var summary: String {
        let (head, bytes, completion) = state.withLock { ($0.head, $0.byteCount, $0.completion) }
        let end: String = switch completion {
        case nil: "not ended"
        case .finished?: "finished"
        case .failure(let error)?: "failed with \(describe(error))"
        }
        return "head \(head.map { "\($0.statusCode)" } ?? "none"), \(bytes) body bytes, \(end)"
    }
}

/// The `URLError` code of `error`, or of the error a ``TransportError`` (``HTTPClient``'s wrapper
/// of transport failures) carries.
func urlErrorCode(of error: any Error) -> URLError.Code? {
    (error as? URLError)?.code ?? (error as? TransportError)?.code
}

/// An error for messages: a `URLError` by its code's name and number.
func describe(_ error: any Error) -> String {
    if let error = error as? URLError { return "URLError(\(describe(error.code)))" }
    return "\(type(of: error)): \(error)"
}

func describe(_ code: URLError.Code) -> String {
    let names: [URLError.Code: String] = [
        .cancelled: ".cancelled", .timedOut: ".timedOut", .cannotConnectToHost: ".cannotConnectToHost",
        .networkConnectionLost: ".networkConnectionLost", .badServerResponse: ".badServerResponse",
        .cannotParseResponse: ".cannotParseResponse", .badURL: ".badURL", .unknown: ".unknown",
        .unsupportedURL: ".unsupportedURL", .cannotFindHost: ".cannotFindHost",
        .fileDoesNotExist: ".fileDoesNotExist", .zeroByteResource: ".zeroByteResource",
    ]
    return "\(names[code] ?? "code") \(code.rawValue)"
}

/// Deterministic bytes (not a repeating short pattern, so a misplaced chunk shows).
func conformancePayload(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> Data {
    var state = seed
    var data = Data(count: count)
    data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
        for index in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            raw[index] = UInt8(truncatingIfNeeded: state >> 56)
        }
    }
    return data
}
