import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// How upload progress is throttled and restarted, in virtual time: a transport the test drives
/// reports the bytes it "sent", and a `TestScheduler` is the client's clock.
@Suite("Upload progress throttling")
struct UploadThrottleTests {
    /// A transport that keeps each exchange for the test to answer and to report progress on.
    final class ManualTransport: HTTPTransport, Sendable {
        private let exchanges = Locked<[(request: TransportRequest, observer: Observer<HTTPResponsePart, any Error>)]>([])

        var count: Int { exchanges.withLock { $0.count } }

        func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
            Signal { [exchanges] observer in
                exchanges.withLock { $0.append((request, observer)) }
                return nil
            }
        }

        /// Reports `sent` bytes of exchange `index`.
        func report(_ sent: Int64, expected: Int64? = nil, exchange index: Int = 0) {
            let request = exchanges.withLock { $0[index].request }
            request.bodyProgress?.progress(sent, expected)
        }

        /// Answers exchange `index` with `status` and `headers`, and ends it.
        func answer(_ status: Int, headers: [String: String] = [:], exchange index: Int = 0) {
            let (request, observer) = exchanges.withLock { $0[index] }
            let url = request.url ?? URL(fileURLWithPath: "/")
            observer.send(.head(HTTPResponseHead(url: url, statusCode: status, fields: headers.map { HTTPField(name: $0.key, value: $0.value) })))
            observer.finish()
        }
    }

    private func record(_ signal: Signal<UploadEvent, any Error>) -> (Locked<[Event<UploadEvent, any Error>]>, CancellationToken) {
        let events = Locked<[Event<UploadEvent, any Error>]>([])
        let token = signal.observe(Observer { event in events.withLock { $0.append(event) } })
        return (events, token)
    }

    private func reports(_ events: Locked<[Event<UploadEvent, any Error>]>) -> [UploadProgress] {
        events.withLock { $0 }.compactMap { event in
            if case .value(.progress(let progress)) = event { return progress }
            return nil
        }
    }

    private func upload(_ client: HTTPClient, bytes: Int) -> Signal<UploadEvent, any Error> {
        var request = URLRequest(url: URL(string: "https://example.com/upload")!)
        request.httpMethod = "POST"
        request.httpBody = Data(count: bytes)
        return client.upload(request)
    }

    @Test func aReportPassesAfterOnePercentOrFiftyMillisecondsAndTheLastBeforeTheResponse() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1_000_000))
        defer { token.cancel() }
        try #require(transport.count == 1)
        // Under 1 % (10,000 bytes) and no time gone by: held back.
        for sent in stride(from: Int64(1000), through: 9000, by: 1000) { transport.report(sent) }
        scheduler.advance(by: .milliseconds(49))
        transport.report(9500)
        #expect(reports(events).map(\.bytesSent) == [0])
        // 50 ms since the last report: passes.
        scheduler.advance(by: .milliseconds(1))
        transport.report(9600)
        // 1 % more: passes at once.
        transport.report(19_600)
        // Less than 1 % more: held back until the response.
        transport.report(19_700)
        // A count that goes back (or repeats) is never reported.
        transport.report(19_000)
        #expect(reports(events).map(\.bytesSent) == [0, 9600, 19_600])
        transport.answer(200)
        let all = events.withLock { $0 }
        #expect(reports(events).map(\.bytesSent) == [0, 9600, 19_600, 19_700])
        #expect(reports(events).allSatisfy { $0.expectedBytes == 1_000_000 && $0.attempt == 1 && !$0.restarted })
        guard case .value(.completed(let response))? = all.dropLast().last, case .finished? = all.last?.completion else {
            Issue.record("expected the response then the end: \(all)")
            return
        }
        #expect(response.statusCode == 200)
        // Nothing after the end.
        transport.report(1_000_000)
        #expect(events.withLock { $0.count } == all.count)
    }

    @Test func theWholeBodyAlwaysPasses() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1_000_000))
        defer { token.cancel() }
        transport.report(995_000)
        transport.report(1_000_000)
        #expect(reports(events).map(\.bytesSent) == [0, 995_000, 1_000_000])
    }

    @Test func aThousandReportsOfATenthOfAPercentPassAHundredTimes() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1_000_000))
        defer { token.cancel() }
        for step in 1...1000 { transport.report(Int64(step) * 1000) }
        let sent = reports(events).map(\.bytesSent)
        #expect(sent.count == 101)
        #expect(sent == (0...100).map { Int64($0) * 10_000 })
    }

    @Test func aRedirectThatRepeatsTheBodyStartsAgainFromZeroAsTheSecondAttempt() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1000))
        defer { token.cancel() }
        transport.report(1000)
        transport.answer(307, headers: ["Location": "/elsewhere"])
        scheduler.advance()
        try #require(transport.count == 2, "the redirect was followed")
        transport.report(600, exchange: 1)
        transport.report(1000, exchange: 1)
        transport.answer(201, exchange: 1)
        let sent = reports(events).map { "\($0.attempt):\($0.bytesSent)" }
        #expect(sent == ["1:0", "1:1000", "2:0", "2:600", "2:1000"])
        #expect(reports(events).map(\.restarted) == [false, false, true, true, true])
        guard case .value(.completed(let response))? = events.withLock({ $0 }).dropLast().last else {
            Issue.record("no response")
            return
        }
        #expect(response.statusCode == 201)
    }

    @Test func aNewSubscriptionOfTheSameSignalIsTheNextAttempt() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1000).retry(1))
        defer { token.cancel() }
        transport.report(1000)
        transport.answer(503)
        scheduler.advance()
        try #require(transport.count == 2, "the retry subscribed again")
        transport.report(1000, exchange: 1)
        transport.answer(200, exchange: 1)
        #expect(reports(events).map { "\($0.attempt):\($0.bytesSent)" } == ["1:0", "1:1000", "2:0", "2:1000"])
        #expect(events.withLock { $0.last?.completion }.map { if case .finished = $0 { true } else { false } } == true)
    }

    @Test func aLengthTheTransportExceedsBecomesUnknown() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1000))
        defer { token.cancel() }
        transport.report(1500)
        transport.answer(200)
        #expect(reports(events).last == UploadProgress(bytesSent: 1500, expectedBytes: nil, attempt: 1))
    }

    @Test func cancellingStopsTheReports() throws {
        let scheduler = TestScheduler()
        let transport = ManualTransport()
        let client = HTTPClient(transport: transport) { $0.scheduler = scheduler }
        let (events, token) = record(upload(client, bytes: 1_000_000))
        transport.report(500_000)
        token.cancel()
        transport.report(1_000_000)
        #expect(reports(events).map(\.bytesSent) == [0, 500_000])
    }
}
