import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import InMemoryTracing
import Signals
import Synchronization
import Tracing
import Transit

/// An in-memory tracer whose identifiers have W3C's form and which injects `traceparent`, as an
/// OpenTelemetry tracer does.
struct W3CTestTracer: Tracer {
    let memory: InMemoryTracer

    init() {
        let next = Atomic<UInt64>(0)
        memory = InMemoryTracer(idGenerator: .init(
            nextTraceID: { String(format: "%032llx", next.wrappingAdd(1, ordering: .relaxed).newValue | (1 << 60)) },
            nextSpanID: { String(format: "%016llx", next.wrappingAdd(1, ordering: .relaxed).newValue | (1 << 60)) }
        ))
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String,
        context: @autoclosure () -> ServiceContext,
        ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant,
        function: String,
        file fileID: String,
        line: UInt
    ) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    var finishedSpans: [FinishedInMemorySpan] { memory.finishedSpans }
}

/// A W3C `traceparent` value split into its trace and parent (span) ids, if it is valid:
/// `00-<32 lowercase hex, not all zero>-<16 lowercase hex, not all zero>-<2 hex>`.
func parseTraceparent(_ value: String?) -> (traceID: String, spanID: String)? {
    guard let parts = value?.split(separator: "-", omittingEmptySubsequences: false), parts.count == 4 else { return nil }
    let hex = Set("0123456789abcdef")
    func valid(_ part: Substring, _ count: Int) -> Bool { part.count == count && part.allSatisfy(hex.contains) }
    guard parts[0] == "00", valid(parts[1], 32), valid(parts[2], 16), valid(parts[3], 2),
          parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" })
    else { return nil }
    return (String(parts[1]), String(parts[2]))
}

/// Keeps the values of a subscription.
final class Recorder<Output: Sendable>: Sendable {
    private let state = Mutex<(values: [Output], terminated: Bool)>(([], false))
    private let token = Mutex<CancellationToken?>(nil)

    init(_ signal: Signal<Output, any Error>) {
        let subscription = signal.observe(Observer { [self] event in
            state.withLock { state in
                switch event {
                case .value(let value): state.values.append(value)
                case .finished, .failed: state.terminated = true
                }
            }
        })
        token.withLock { $0 = subscription }
    }

    var values: [Output] { state.withLock { $0.values } }
    var isTerminated: Bool { state.withLock { $0.terminated } }
}

/// A monitor that lets a test wait for an event: no polling, no sleeping.
final class EventWaiter: HTTPEventMonitor {
    private struct State {
        var events: [HTTPEvent] = []
        var waiters: [(predicate: @Sendable (HTTPEvent) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    func receive(_ event: HTTPEvent) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(event) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once an event `predicate` accepts has been received (at once if one was).
    func wait(for predicate: @escaping @Sendable (HTTPEvent) -> Bool) async {
        await withCheckedContinuation { continuation in
            let seen = state.withLock { state -> Bool in
                if state.events.contains(where: predicate) { return true }
                state.waiters.append((predicate, continuation))
                return false
            }
            if seen { continuation.resume() }
        }
    }

    var events: [HTTPEvent] { state.withLock { $0.events } }
}
