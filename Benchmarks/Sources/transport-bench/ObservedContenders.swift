import CoreMetrics
import Foundation
import InMemoryTracing
import Logging
import Signals
import Synchronization
import Transit
import TransitAsyncHTTPClient
import TransitObservability

/// The README chain with `ObservabilityMonitor` on its client: what logs, metrics and traces cost
/// per request against the same chain without a monitor (`chain`, `ahc-chain`, `mem-chain`).
///
/// The backends are the cheapest that still take everything the monitor hands them, so that what
/// is measured is the monitor's own work (events, dimensions, span attributes, the trace header):
/// metrics to no-op handlers (a metric object is still made per record, as with any backend),
/// spans to swift-distributed-tracing's in-memory tracer (emptied after each request, so memory
/// stays flat), logs to a no-op handler at `info` (a successful request logs nothing at `info`).
func observedPostService(base: String, transport: any HTTPTransport) -> BenchPostService {
    let tracer = InMemoryTracer()
    let monitor = ObservabilityMonitor(
        logger: Logger(label: "transit.client", factory: { _ in SwiftLogNoOpLogHandler() }),
        metrics: NoOpMetricsFactory(),
        tracer: tracer
    )
    let client = HTTPClient(transport: transport) {
        $0.monitors = [monitor, SpanDrain(tracer: tracer)]
    }
    return BenchPostService(
        baseURL: base,
        client: client,
        tokens: TokenStore(token: AuthToken(accessToken: bearerToken)) { current in Signal(value: current) }
    )
}

/// Empties the in-memory tracer when a request ends.
struct SpanDrain: HTTPEventMonitor {
    let tracer: InMemoryTracer
    func receive(_ event: HTTPEvent) {
        if case .requestEnded = event.kind { tracer.clearAll() }
    }
}

/// A metrics factory whose handlers drop every value.
struct NoOpMetricsFactory: MetricsFactory {
    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { NOOPMetricsHandler.instance }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { NOOPMetricsHandler.instance }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { NOOPMetricsHandler.instance }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { NOOPMetricsHandler.instance }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

/// The README chain with `ObservabilityMonitor`, on the adapter (`ahc-observed`).
func asyncHTTPClientObserved(base: String) -> BenchPostService {
    observedPostService(base: base, transport: AsyncHTTPClientTransport())
}

/// A monitor that only counts the events it receives: what the client's own event path costs (the
/// events, their requests, the attempt measurements), without a logging or metrics backend.
final class CountingMonitor: HTTPEventMonitor {
    let count = Atomic<Int>(0)

    func receive(_ event: HTTPEvent) {
        count.add(1, ordering: .relaxed)
    }
}
