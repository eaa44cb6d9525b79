import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A `GET /items` that answers with `answers` in order, through `respondToRateLimiting`.
private struct RateLimitFixture {
    let scheduler = TestScheduler()
    let transport: StubTransport
    let log = AuthRetryLog<HTTPResponse>()
    /// The `retryAfter` of every 429 the operator saw, as parsed by `catchHTTPErrors`.
    let parsed = AuthRetryBox<[TimeInterval?]>([])
    let token: CancellationToken

    init(_ answers: [StubResponse], maxWait: Duration = .seconds(60)) {
        transport = StubTransport(scheduler: scheduler)
        let stub = transport.stub(.get, path: "/items")
        for answer in answers { stub.thenRespond(answer) }
        let parsed = self.parsed
        let signal = AuthRetryAPI(transport: transport).get(endpoint: "items")
            .catchHTTPErrors()
            .handleEvents(receiveCompletion: { completion in
                if case .failure(let error) = completion,
                   case .tooManyRequests(let retryAfter, _)? = error as? HTTPClientError {
                    parsed.mutate { $0.append(retryAfter?.timeInterval) }
                }
            })
            .respondToRateLimiting(maxWait: maxWait, scheduler: scheduler)
        token = log.subscribe(to: signal)
    }

    var requestCount: Int { transport.requests.count }

    /// Checks that the second request goes out exactly `wait` seconds after the 429: not one
    /// nanosecond earlier.
    func expectRetry(after wait: TimeInterval, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(requestCount == 1, sourceLocation: sourceLocation)
        if wait > 0 {
            scheduler.advance(by: .seconds(wait) - .nanoseconds(1))
            #expect(requestCount == 1, "nothing before the asked time", sourceLocation: sourceLocation)
            #expect(log.events.isEmpty, sourceLocation: sourceLocation)
            scheduler.advance(by: .nanoseconds(1))
        } else {
            scheduler.advance(by: .zero)
        }
        #expect(requestCount == 2, "the request goes out at the asked time", sourceLocation: sourceLocation)
        #expect(log.values.map(\.text) == ["ok"], sourceLocation: sourceLocation)
        #expect(log.isFinished, sourceLocation: sourceLocation)
        scheduler.run()
        #expect(requestCount == 2, "exactly one retry", sourceLocation: sourceLocation)
        #expect(scheduler.pendingCount == 0, sourceLocation: sourceLocation)
        #expect(log.violations == 0, sourceLocation: sourceLocation)
    }
}

/// `date` as an HTTP-date in IMF-fixdate, RFC 850 or asctime form.
private func httpDate(_ date: Date, form: String) -> String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "GMT")!
    let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
    let shortDays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    let two = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
    let time = "\(two(c.hour!)):\(two(c.minute!)):\(two(c.second!))"
    let month = months[c.month! - 1]
    switch form {
    case "imf":
        return "\(shortDays[c.weekday! - 1]), \(two(c.day!)) \(month) \(c.year!) \(time) GMT"
    case "rfc850":
        return "\(longDays[c.weekday! - 1]), \(two(c.day!))-\(month)-\(two(c.year! % 100)) \(time) GMT"
    default:
        let day = c.day! < 10 ? " \(c.day!)" : "\(c.day!)"
        return "\(shortDays[c.weekday! - 1]) \(month) \(day) \(time) \(c.year!)"
    }
}

@Suite struct RateLimitingTests {
    @Test(arguments: [
        (["Retry-After": "30"], 30.0),
        (["Retry-After": "1.5"], 1.5),
        (["retry-after": "7"], 7.0),
        (["Retry-After": "0"], 0.0),
        (["Retry-After": "-5"], 0.0),
        (["Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"], 0.0),
        (["Retry-After": "soon"], 60.0),
        (["Retry-After": "1e3"], 60.0),
        (["Retry-After": ""], 60.0),
        ([:], 60.0),
    ] as [([String: String], TimeInterval)])
    func a429IsRetriedOnceAfterExactlyTheAskedTime(headers: [String: String], wait: TimeInterval) {
        let f = RateLimitFixture([.status(429, headers: headers), .text("ok")])
        f.expectRetry(after: wait)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: ["imf", "rfc850", "asctime"])
    func anHTTPDateInEachFormIsWaitedFor(form: String) throws {
        let target = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 30).rounded(.up))
        let f = RateLimitFixture([.status(429, headers: ["Retry-After": httpDate(target, form: form)]), .text("ok")])
        let parsed = try #require(f.parsed.current.first ?? nil)
        #expect(parsed > 28 && parsed <= 31, "parsed \(parsed) seconds")
        f.expectRetry(after: parsed)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: ["61", "3600", "imf"])
    func askingForLongerThanTheCapFailsAtOnceWithoutASecondRequest(header: String) throws {
        let value = header == "imf" ? httpDate(Date().addingTimeInterval(3600), form: "imf") : header
        let f = RateLimitFixture([.status(429, headers: ["Retry-After": value]), .text("ok")])
        let error = try #require(f.log.failure as? HTTPClientError)
        guard case .tooManyRequests(let retryAfter?, let response?) = error else {
            Issue.record("expected a 429 with its Retry-After, got \(error)")
            return
        }
        #expect(retryAfter > .seconds(60))
        #expect(response.value(forHTTPHeaderField: "Retry-After") == value)
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        #expect(f.log.terminalCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func askingForExactlyTheCapWaits() {
        let f = RateLimitFixture([.status(429, headers: ["Retry-After": "60"]), .text("ok")])
        f.expectRetry(after: 60)
        withExtendedLifetime(f.token) {}
    }

    @Test func aSecond429FailsWithThatSecond429() {
        let f = RateLimitFixture([
            .status(429, headers: ["Retry-After": "1"]),
            .status(429, headers: ["Retry-After": "2"]),
            .text("ok"),
        ])
        f.scheduler.advance(by: .seconds(1))
        #expect(f.requestCount == 2)
        guard case .tooManyRequests(let retryAfter, _)? = f.log.failure as? HTTPClientError else {
            Issue.record("expected a 429, got \(String(describing: f.log.failure))")
            return
        }
        #expect(retryAfter == .seconds(2), "the second 429's own Retry-After")
        f.scheduler.run()
        #expect(f.requestCount == 2)
        #expect(f.log.terminalCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func aSuccessPassesThroughUntouched() {
        let f = RateLimitFixture([.text("ok", headers: ["Retry-After": "5"])])
        #expect(f.log.values.map(\.text) == ["ok"])
        #expect(f.log.isFinished)
        #expect(f.scheduler.pendingCount == 0)
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [401, 503, 500, 404])
    func otherErrorsAreNotRetried(status: Int) {
        let f = RateLimitFixture([.status(status, headers: ["Retry-After": "1"]), .text("ok")])
        #expect(statusCode(of: f.log.failure) == status)
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func aTransportErrorIsNotRetried() {
        let f = RateLimitFixture([.failure(URLError(.timedOut)), .text("ok")])
        #expect((f.log.failure as? TransportError)?.code == .timedOut)
        #expect(f.scheduler.pendingCount == 0)
        withExtendedLifetime(f.token) {}
    }

    @Test func cancellingDuringTheWaitSendsNothingAndLeavesNothingScheduled() {
        let f = RateLimitFixture([.status(429, headers: ["Retry-After": "30"]), .text("ok")])
        f.scheduler.advance(by: .seconds(10))
        #expect(f.scheduler.pendingCount == 1)
        f.token.cancel()
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        #expect(f.log.events.isEmpty)
    }

    @Test func releasingTheSubscriptionDuringTheWaitReleasesEverything() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond(.status(429, headers: ["Retry-After": "30"])).thenRespond(.text("ok"))
        final class Sentinel: Sendable {}
        weak var weakSentinel: Sentinel?
        do {
            let sentinel = Sentinel()
            weakSentinel = sentinel
            let token = AuthRetryAPI(transport: transport).get(endpoint: "items")
                .catchHTTPErrors()
                .respondToRateLimiting(maxWait: .seconds(60), scheduler: scheduler)
                .sink(receiveCompletion: { _ in withExtendedLifetime(sentinel) {} }, receiveValue: { _ in })
            #expect(scheduler.pendingCount == 1)
            withExtendedLifetime(token) {}
        }
        #expect(weakSentinel == nil, "the observer was released with the token")
        #expect(scheduler.pendingCount == 0)
        scheduler.run()
        #expect(transport.requests.count == 1)
    }

    @Test(arguments: [Duration.seconds(-5), .zero])
    func aNegativeOrZeroCapMeansNoWait(cap: Duration) {
        let f = RateLimitFixture([.status(429), .text("ok")], maxWait: cap)
        f.expectRetry(after: 0)
        let refused = RateLimitFixture([.status(429, headers: ["Retry-After": "1"]), .text("ok")], maxWait: cap)
        #expect(statusCode(of: refused.log.failure) == 429)
        #expect(refused.requestCount == 1)
        withExtendedLifetime((f.token, refused.token)) {}
    }

    @Test func anInfiniteCapWithoutAHeaderWaitsWithoutOverflowing() {
        let f = RateLimitFixture([.status(429), .text("ok")], maxWait: .seconds(Int64.max))
        f.scheduler.advance(by: .seconds(86_400 * 365))
        #expect(f.requestCount == 1)
        #expect(f.scheduler.pendingCount == 1)
        f.token.cancel()
        #expect(f.scheduler.pendingCount == 0)
    }
}
