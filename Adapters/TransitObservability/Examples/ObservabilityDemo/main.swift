// One request through a redirect, a token renewal and a retry after a 503, against a server on
// 127.0.0.1, observed by TransitObservability's monitor: prints the request's trace as a tree
// and the metrics it recorded as a table.
//
//     swift run observability-demo
import CoreMetrics
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import InMemoryTracing
import Logging
import MetricsTestKit
import Signals
import Synchronization
import Tracing
import Transit
import TransitObservability
import TransitTesting

// The service: `/posts` moved to `/v2/posts`, which wants a fresh token and is busy once.
let busy = Locked(true)
let server = LoopbackServer { request in
    switch request.path {
    case "/posts":
        return .status(301, headers: ["Location": "/v2/posts"])
    case "/v2/posts":
        guard request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh" else { return .status(401) }
        if busy.withLock({ value in defer { value = false }; return value }) { return .status(503, headers: ["Retry-After": "0.25"]).delayed(by: .milliseconds(20)) }
        return .json(#"[{"id":1,"title":"Hello"}]"#).delayed(by: .milliseconds(10))
    case "/token":
        return .json(#"{"accessToken":"fresh"}"#).delayed(by: .milliseconds(40))
    default:
        return .status(404)
    }
}
try server.start()
defer { server.stop() }

// In-process backends (a service passes its own, or bootstraps the global systems).
let tracer = InMemoryTracer()
let metrics = TestMetrics()
// The log goes to standard output, in order with what this program prints.
var logger = Logger(label: "forum") { StreamLogHandler.standardOutput(label: $0) }
logger.logLevel = .info

let tokenURL = server.url("/token")
let refresher = HTTPClient()
let store = TokenStore(token: AuthToken(accessToken: "stale"), scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)) { _ in
    var refresh = URLRequest(url: tokenURL)
    refresh.httpMethod = "POST"
    return refresher.send(refresh).catchHTTPErrors().tryMap { try JSONDecoder().decode(AuthToken.self, from: $0.data) }
}

/// Tells when a request has ended (its spans are then finished).
final class RequestEnds: HTTPEventMonitor {
    let (ends, continuation) = AsyncStream<Void>.makeStream()
    func receive(_ event: HTTPEvent) {
        if case .requestEnded = event.kind { continuation.yield() }
    }
}
let requestEnds = RequestEnds()

// The monitor: one line in the client's configuration.
let client = HTTPClient {
    $0.monitors = [ObservabilityMonitor(logger: logger, metrics: metrics, tracer: tracer), requestEnds]
    $0.authorizer = store
}

print("— logs at info —")
let response = try await client.send(URLRequest(url: server.url("/posts")), options: RequestOptions(operationName: "listPosts"))
    .catchHTTPErrors()
    .retry(RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), jitter: .none))
    .firstValue()
// The request's end is reported just after its response is delivered.
for await _ in requestEnds.ends { break }
print("\nresponse: \(response.statusCode), \(response.data.count) bytes\n")

// MARK: The trace as a tree

func milliseconds(_ from: UInt64, _ to: UInt64) -> String {
    String(format: "%.1f ms", Double(Int64(to) - Int64(from)) / 1e6)
}

func render(_ value: SpanAttribute) -> String {
    switch value {
    case .int64(let number): "\(number)"
    case .double(let number): String(format: "%.3f", number)
    case .string(let text): text
    case .bool(let flag): "\(flag)"
    default: "\(value)"
    }
}

func attribute(_ span: FinishedInMemorySpan, _ key: String) -> String {
    span.attributes[key].map { render($0.toSpanAttribute()) } ?? "-"
}

func render(_ attributes: SpanAttributes) -> String {
    var parts: [String] = []
    attributes.forEach { key, value in parts.append("\(key)=\(render(value))") }
    return parts.sorted().joined(separator: " ")
}

print("— trace —")
let spans = tracer.finishedSpans
for root in spans where root.parentSpanID == nil {
    let start = root.startInstant.nanosecondsSinceEpoch
    print("\(root.operationName)  \(milliseconds(start, root.endInstant.nanosecondsSinceEpoch))  status \(attribute(root, "http.response.status_code"))  trace \(root.traceID)")
    // Attempts and the request's events (waits, refreshes, redirects), in the order they happened.
    enum Line { case attempt(FinishedInMemorySpan), event(SpanEvent) }
    let attempts = spans.filter { $0.parentSpanID == root.spanID }.map { (at: $0.startInstant.nanosecondsSinceEpoch, line: Line.attempt($0)) }
    let events = root.events.map { (at: $0.nanosecondsSinceEpoch, line: Line.event($0)) }
    let lines = (attempts + events).sorted { $0.at < $1.at }
    for (index, entry) in lines.enumerated() {
        let branch = index == lines.count - 1 ? "└─" : "├─"
        let offset = "+\(milliseconds(start, entry.at))"
        switch entry.line {
        case .attempt(let span):
            let resend = attribute(span, "http.request.resend_count")
            print("\(branch) \(span.operationName) \(attribute(span, "url.full")) → \(attribute(span, "http.response.status_code"))  "
                + "\(milliseconds(span.startInstant.nanosecondsSinceEpoch, span.endInstant.nanosecondsSinceEpoch))  at \(offset)"
                + (resend == "-" ? "" : "  resend \(resend)") + (span.status?.code == .error ? "  ✗" : ""))
        case .event(let event):
            print("\(branch) • \(event.name)  at \(offset)  \(render(event.attributes))")
        }
    }
}

// MARK: The metrics as a table

print("\n— metrics —")
func dims(_ dimensions: [(String, String)]) -> String {
    dimensions.filter { !["http.request.method", "server.address", "server.port", "url.scheme", "operation"].contains($0.0) }
        .map { "\($0.0)=\($0.1)" }.joined(separator: " ")
}
var rows: [(String, String, String)] = []
for timer in metrics.timers {
    let values = timer.values
    let mean = values.isEmpty ? 0 : Double(values.reduce(0, +)) / Double(values.count) / 1e6
    rows.append((timer.label, dims(timer.dimensions), "\(values.count) × mean \(String(format: "%.1f", mean)) ms"))
}
for counter in metrics.counters {
    rows.append((counter.label, dims(counter.dimensions), "\(counter.totalValue)"))
}
for recorder in metrics.recorders {
    rows.append((recorder.label, dims(recorder.dimensions), "\(recorder.values.map { Int($0) })"))
}
for meter in metrics.meters {
    rows.append((meter.label, dims(meter.dimensions), "now \(meter.lastValue.map { Int($0) } ?? 0)"))
}
rows.sort { ($0.0, $0.1) < ($1.0, $1.1) }
let widths = (rows.map(\.0.count).max() ?? 0, rows.map(\.1.count).max() ?? 0)
for row in rows {
    print(row.0.padding(toLength: widths.0, withPad: " ", startingAt: 0) + "  " + row.1.padding(toLength: widths.1, withPad: " ", startingAt: 0) + "  " + row.2)
}
print("(every metric also has http.request.method=GET server.address=127.0.0.1 server.port=\(server.port) url.scheme=http operation=listPosts)")
