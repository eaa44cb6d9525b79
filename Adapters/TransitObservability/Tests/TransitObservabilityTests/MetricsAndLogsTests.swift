import CoreMetrics
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import InMemoryLogging
import Logging
import MetricsTestKit
import Signals
import Testing
import Tracing
import Transit
import TransitObservability
import TransitTesting

@Suite("Metrics and logs", .timeLimit(.minutes(2)))
struct MetricsAndLogsTests {
    /// The failure run on URLSession with a metrics test kit and an in-memory log handler at
    /// `level`, no global bootstrap.
    private func failureRun(logLevel: Logger.Level) async throws -> (FailureRun, TestMetrics, InMemoryLogHandler) {
        let run = try FailureRun()
        let metrics = TestMetrics()
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "transit.client") { _ in logs }
        logger.logLevel = logLevel
        let waiter = EventWaiter()
        let client = run.client(URLSessionTransport(), monitors: [ObservabilityMonitor(logger: logger, metrics: metrics, tracer: nil), waiter])
        let recorder = await run.run(on: client, waiter: waiter, in: .topLevel)
        #expect(recorder.values.first?.statusCode == 200)
        run.server.stop()
        return (run, metrics, logs)
    }

    @Test func theNamedMetricsWithTheirDimensionsAndNoPath() async throws {
        let (run, metrics, _) = try await failureRun(logLevel: .info)
        let port = String(run.server.port)
        let common = [
            ("http.request.method", "GET"), ("server.address", "127.0.0.1"), ("server.port", port), ("url.scheme", "http"),
            ("operation", "getData"),
        ]
        // One duration per attempt, by status; the failed answers with their error.type.
        let durations = metrics.timers(label: "http.client.request.duration")
        #expect(durations.map(\.values.count).reduce(0, +) == 6)
        #expect(try metrics.expectTimer("http.client.request.duration", common + [("http.response.status_code", "302")]).values.count == 3)
        #expect(try metrics.expectTimer("http.client.request.duration", common + [("http.response.status_code", "200")]).values.count == 1)
        #expect(try metrics.expectTimer(
            "http.client.request.duration", common + [("http.response.status_code", "503"), ("error.type", "503")]
        ).values.count == 1)
        #expect(try metrics.expectTimer(
            "http.client.request.duration", common + [("http.response.status_code", "401"), ("error.type", "401")]
        ).values.count == 1)
        // Body sizes per attempt: the 200's body as received.
        let received = try metrics.expectRecorder("http.client.response.body.size", common + [("http.response.status_code", "200")])
        #expect(received.values == [Double(#"{"secret":"BODY-SECRET"}"#.utf8.count)])
        #expect(!metrics.recorders(label: "http.client.request.body.size").isEmpty)
        // Active requests: up once, down once.
        let active = try metrics.expectMeter("http.client.active_requests", common)
        #expect(active.values == [1, 0])
        // What only Transit knows.
        #expect(metrics.counterTotal(label: "transit.client.redirects") == 3)
        #expect(try metrics.expectCounter("transit.client.retries", common + [("error.type", "503")]).totalValue == 1)
        #expect(try metrics.expectCounter("transit.client.credential_renewals", common + [("outcome", "started")]).totalValue == 1)
        #expect(try metrics.expectCounter("transit.client.credential_renewals", common + [("outcome", "succeeded")]).totalValue == 1)
        // The time the caller waited in all: the retry's second.
        #expect(try metrics.expectTimer("transit.client.wait.duration", common).values == [1_000_000_000])

        // No path, no query, in any dimension of any metric.
        let dimensions = metrics.counters.map(\.dimensions) + metrics.timers.map(\.dimensions)
            + metrics.recorders.map(\.dimensions) + metrics.meters.map(\.dimensions)
        #expect(!dimensions.isEmpty)
        for (key, value) in dimensions.joined() {
            #expect(!value.contains("/") && !value.contains("?") && !value.contains("QUERY-SECRET"), "\(key)=\(value)")
        }
    }

    @Test func atInfoTheLogsHoldFailuresAndRetriesButNoSecret() async throws {
        let (_, _, logs) = try await failureRun(logLevel: .info)
        let entries = logs.entries
        let messages = entries.map(\.message.description)
        #expect(messages.contains("retry scheduled"))
        #expect(!messages.contains("request started") && !messages.contains("attempt ended"))
        #expect(entries.allSatisfy { $0.level >= .info })
        let retry = try #require(entries.first { $0.message.description == "retry scheduled" })
        #expect(retry.metadata["error.type"] == "503")
        #expect(retry.metadata["operation"] == "getData")
        #expect(retry.metadata["transit.request.id"] != nil)
        let secrets = ["OLD-TOKEN", "FRESH-TOKEN", "HEADER-SECRET", "BODY-SECRET", "QUERY-SECRET"]
        for entry in entries {
            let text = "\(entry.message) \(entry.metadata)"
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
        }
    }

    @Test func atDebugEveryEventIsLoggedStillWithoutSecrets() async throws {
        let (_, _, logs) = try await failureRun(logLevel: .trace)
        let messages = Set(logs.entries.map(\.message.description))
        #expect(messages.isSuperset(of: ["request started", "attempt started", "attempt ended", "redirect followed", "credential renewal", "request completed"]))
        let secrets = ["OLD-TOKEN", "FRESH-TOKEN", "HEADER-SECRET", "BODY-SECRET", "QUERY-SECRET"]
        for entry in logs.entries {
            let text = "\(entry.message) \(entry.metadata)"
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
        }
    }
}
