import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Sun, 06 Nov 1994 08:49:37 GMT, the example date of RFC 9110.
private let rfcExampleDate = Date(timeIntervalSince1970: 784_111_777)

@Suite("Retry-After parsing")
struct RetryAfterTests {
    @Test("delay-seconds: integers, fractions and surrounding spaces", arguments: [
        ("0", 0.0), ("5", 5), ("120", 120), ("86400", 86_400), ("1.5", 1.5), ("0.25", 0.25),
        (" 30 ", 30), ("\t7", 7), ("007", 7), ("99999999999", 99_999_999_999),
    ])
    func delaySeconds(value: String, expected: Double) {
        #expect(RetryAfter.delay(from: value, now: rfcExampleDate) == .seconds(expected))
    }

    @Test("a negative delay means now", arguments: ["-5", "-1.5", "-0", "-86400"])
    func negativeDelay(value: String) {
        #expect(RetryAfter.delay(from: value, now: rfcExampleDate) == .seconds(0))
    }

    @Test("HTTP-date in all three RFC 9110 forms, measured from now", arguments: [
        "Sun, 06 Nov 1994 08:50:37 GMT",      // IMF-fixdate
        "Sunday, 06-Nov-94 08:50:37 GMT",     // obsolete RFC 850
        "Sun Nov  6 08:50:37 1994",           // asctime, with its double space
        "Sun Nov 6 08:50:37 1994",            // asctime with a single space, as some servers send it
        "Sun Nov 06 08:50:37 1994",           // asctime with a zero-padded day
        "sun, 06 nov 1994 08:50:37 gmt",      // names in lower case
    ])
    func httpDates(value: String) {
        #expect(RetryAfter.delay(from: value, now: rfcExampleDate) == .seconds(60))
    }

    @Test("HTTP-dates over month, year and leap-day boundaries")
    func dateArithmetic() {
        let newYear2025 = Date(timeIntervalSince1970: 1_735_689_600) // Wed, 01 Jan 2025 00:00:00 GMT
        #expect(RetryAfter.delay(from: "Wed, 01 Jan 2025 01:00:00 GMT", now: newYear2025) == .seconds(3600))
        #expect(RetryAfter.delay(from: "Thu, 02 Jan 2025 00:00:00 GMT", now: newYear2025) == .seconds(86_400))
        #expect(RetryAfter.delay(from: "Thu, 29 Feb 2024 00:00:00 GMT", now: newYear2025) == .seconds(0))
        let leapDay = Date(timeIntervalSince1970: 951_782_400) // Tue, 29 Feb 2000 00:00:00 GMT
        #expect(RetryAfter.delay(from: "Wed, 01 Mar 2000 00:00:00 GMT", now: leapDay) == .seconds(86_400))
        #expect(RetryAfter.delay(from: "Tue Feb 29 00:00:10 2000", now: leapDay) == .seconds(10))
    }

    @Test("RFC 850 two-digit years: more than 50 years ahead means the previous century")
    func twoDigitYears() {
        let newYear2025 = Date(timeIntervalSince1970: 1_735_689_600)
        #expect(RetryAfter.delay(from: "Wednesday, 01-Jan-25 00:01:00 GMT", now: newYear2025) == .seconds(60))
        // 2074 is within 50 years: a future date.
        #expect((RetryAfter.delay(from: "Monday, 01-Jan-74 00:00:00 GMT", now: newYear2025) ?? .zero) > .zero)
        // 2080 would be more than 50 years ahead: it is 1980, in the past.
        #expect(RetryAfter.delay(from: "Tuesday, 01-Jan-80 00:00:00 GMT", now: newYear2025) == .seconds(0))
    }

    @Test("a date in the past means now", arguments: [
        "Sat, 05 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:36 GMT", "Thu, 01 Jan 1970 00:00:00 GMT",
        "Saturday, 05-Nov-94 08:49:37 GMT", "Sat Nov  5 08:49:37 1994",
    ])
    func pastDates(value: String) {
        #expect(RetryAfter.delay(from: value, now: rfcExampleDate) == .seconds(0))
    }

    @Test("garbage means absent", arguments: [
        "", " ", "\t", "soon", "1e3", "1E3", "0x10", "12abc", "abc12", "1.", ".5", "1.2.3", "--5", "+-5",
        "1 000", "1,5", "inf", "nan", "Infinity", "\u{0663}", "5s", "five",
        // dates that do not exist
        "Thu, 30 Feb 1995 08:49:37 GMT", "Fri, 29 Feb 1995 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 +8:49:37 GMT",
        // weekday names that are not weekdays, or not the date's weekday
        "Fun, 06 Nov 1994 08:49:37 GMT", "Mon, 06 Nov 1994 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT", "Monday, 06-Nov-94 08:49:37 GMT", "Mon Nov  6 08:49:37 1994",
        "06 Nov 1994 08:49:37 GMT",
        // zones other than GMT
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000", "Sun, 06 Nov 1994 08:49:37 PST",
        "Sun, 06 Nov 1994 08:49:37", "Sunday, 06-Nov-94 08:49:37 EST", "Sun Nov  6 08:49:37 1994 GMT",
        // wrong shapes of the obsolete forms
        "Sunday, 06-Nov-1994 08:49:37 GMT", "Sunday, 06-Nov 08:49:37 GMT", "Sun Nov  6 08:49:37 94",
        "Sun Nov 123 08:49:37 1994", "1994-11-06T08:49:37Z",
    ])
    func garbage(value: String) {
        #expect(RetryAfter.delay(from: value, now: rfcExampleDate) == nil)
    }

    @Test("a missing header means absent")
    func missing() {
        #expect(RetryAfter.delay(from: nil) == nil)
        #expect(RetryAfter.delay(in: nil) == nil)
        #expect(RetryAfter.delay(in: makeResponse(status: 429)) == nil)
    }

    @Test("the response's Retry-After header is found case-insensitively")
    func fromResponse() {
        #expect(RetryAfter.delay(in: makeResponse(status: 429, headers: ["retry-after": "42"])) == .seconds(42))
        #expect(RetryAfter.delay(in: makeResponse(status: 503, headers: ["RETRY-AFTER": "1.5"])) == .seconds(1.5))
        let dated = makeResponse(status: 503, headers: ["Retry-After": "Sun, 06 Nov 1994 08:51:37 GMT"])
        #expect(RetryAfter.delay(in: dated, now: rfcExampleDate) == .seconds(120))
    }

    @Test("an absurd clock does not crash the RFC 850 century rule")
    func absurdNow() {
        #expect(RetryAfter.delay(from: "Sunday, 06-Nov-94 08:49:37 GMT", now: Date(timeIntervalSince1970: .infinity)) == nil)
        #expect(RetryAfter.delay(from: "Sunday, 06-Nov-94 08:49:37 GMT", now: Date(timeIntervalSince1970: .nan)) == nil)
        #expect(RetryAfter.delay(from: "5", now: Date(timeIntervalSince1970: .nan)) == .seconds(5))
    }
}

/// Defect: an all-digit `Retry-After` too large for a `Double` parsed as *absent*, so
/// `respondToRateLimiting` waited its own cap and retried instead of failing fast.
@Suite("Retry-After too large for a Double")
struct HugeRetryAfterTests {
    static let huge = String(repeating: "9", count: 400)

    @Test("an all-digit value too large for a Double means longer than any cap", arguments: [
        huge, "1" + String(repeating: "0", count: 309), huge + ".5", "+" + huge, " \(huge) ",
    ])
    func parsesAsTheLargestFiniteDelay(value: String) {
        let seconds = RetryAfter.delay(from: value, now: rfcExampleDate)
        #expect(seconds == RetryAfter.longest)
        #expect(seconds.map { $0 < Duration(attoseconds: .max) } == true)
    }

    @Test("a negative value too large for a Double still means now")
    func hugeNegativeMeansNow() {
        #expect(RetryAfter.delay(from: "-" + Self.huge, now: rfcExampleDate) == .seconds(0))
    }

    @Test("respondToRateLimiting fails at once on a 429 with a huge Retry-After")
    func rateLimitingFailsFast() throws {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond(.status(429, headers: ["Retry-After": Self.huge])).thenRespond(.text("ok"))
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: AuthRetryAPI(transport: transport).get(endpoint: "items")
            .catchHTTPErrors()
            .respondToRateLimiting(maxWait: .seconds(5), scheduler: scheduler))
        guard case .tooManyRequests(let retryAfter, _)? = log.failure as? HTTPClientError else {
            Issue.record("expected a 429 at once, got \(String(describing: log.failure))")
            return
        }
        #expect(retryAfter == RetryAfter.longest)
        #expect(scheduler.pendingCount == 0)
        scheduler.run()
        #expect(transport.requests.count == 1)
        // The description stays readable.
        #expect(log.failure.map { "\($0)" }?.contains("HTTP 429") == true)
        withExtendedLifetime(token) {}
    }

    @Test("retry(policy) fails at once on a 503 with a huge Retry-After")
    func retryPolicyFailsFast() throws {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond(.status(503, headers: ["Retry-After": Self.huge])).thenRespond(.text("ok"))
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: AuthRetryAPI(transport: transport).get(endpoint: "items")
            .catchHTTPErrors()
            .retry(RetryPolicy(maxAttempts: 3, maxWait: .seconds(60)), scheduler: scheduler))
        #expect((log.failure as? HTTPServerError)?.retryAfter == RetryAfter.longest)
        #expect(scheduler.pendingCount == 0)
        scheduler.run()
        #expect(transport.requests.count == 1)
        withExtendedLifetime(token) {}
    }

    @Test("a caller that waits for ever gets the wait clamped, never a crash or an early retry")
    func unboundedCapIsClamped() {
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/items").thenRespond(.status(429, headers: ["Retry-After": Self.huge])).thenRespond(.text("ok"))
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: AuthRetryAPI(transport: transport).get(endpoint: "items")
            .catchHTTPErrors()
            .respondToRateLimiting(maxWait: .seconds(Int64.max), scheduler: scheduler))
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(by: .seconds(86_400 * 365 * 100))
        #expect(transport.requests.count == 1, "no retry within a century")
        #expect(log.events.isEmpty)
        token.cancel()
        #expect(scheduler.pendingCount == 0)
    }

    @Test("on a real queue the clamped wait is scheduled without trapping, and cancelled")
    func realQueueSchedulesTheClampedWait() {
        let transport = StubTransport()
        transport.stub(.get, path: "/items").thenRespond(.status(429, headers: ["Retry-After": Self.huge])).thenRespond(.text("ok"))
        let log = AuthRetryLog<HTTPResponse>()
        let token = log.subscribe(to: AuthRetryAPI(transport: transport).get(endpoint: "items")
            .catchHTTPErrors()
            .respondToRateLimiting(maxWait: .seconds(Int64.max), scheduler: DispatchQueue(label: "huge-retry-after")))
        #expect(transport.requests.count == 1)
        #expect(log.events.isEmpty, "waiting about 285 years, not retrying at once")
        token.cancel()
        #expect(log.events.isEmpty)
    }

    /// A client whose clock is ten minutes fast would read the date as past (no wait at all);
    /// measured from the response's own `Date` header, it waits the minute the server meant.
    @Test func anHTTPDateIsMeasuredFromTheResponsesOwnDateHeader() {
        let fastClock = rfcExampleDate.addingTimeInterval(600)
        let retryAt = "Sun, 06 Nov 1994 08:50:37 GMT"
        let serverNow = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(RetryAfter.delay(from: retryAt, now: fastClock) == .zero)
        #expect(RetryAfter.delay(from: retryAt, serverDate: serverNow, now: fastClock) == .seconds(60))
        #expect(RetryAfter.delay(from: retryAt, serverDate: " \(serverNow) ", now: fastClock) == .seconds(60))
        // An unreadable or missing `Date` falls back to the client's clock; seconds are seconds.
        #expect(RetryAfter.delay(from: retryAt, serverDate: "yesterday", now: rfcExampleDate) == .seconds(60))
        #expect(RetryAfter.delay(from: retryAt, serverDate: nil, now: rfcExampleDate) == .seconds(60))
        #expect(RetryAfter.delay(from: "30", serverDate: serverNow, now: fastClock) == .seconds(30))
    }

    /// The errors of a 429 or 503 and the client's cooldowns read the date the same way: a
    /// response from 1994 asking for a minute is a minute, whatever today's date.
    @Test func errorsAndCooldownsReadTheDateAgainstTheResponsesDate() throws {
        let headers = ["Retry-After": "Sun, 06 Nov 1994 08:50:37 GMT", "Date": "Sun, 06 Nov 1994 08:49:37 GMT"]
        let scheduler = TestScheduler()
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/v1/a").thenRespond(.status(429, headers: headers))
        transport.stub(.get, path: "/v1/b").thenRespond(.text("b"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.cooldowns = Cooldowns(maxWait: .seconds(120))
        }
        let limited = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/v1/a")!)).catchHTTPErrors())
        let error = try #require(limited.failure as? HTTPClientError)
        #expect(error.retryAfter == .seconds(60))
        let held = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/v1/b")!)))
        scheduler.advance(by: .seconds(59))
        #expect(held.values.isEmpty)
        scheduler.advance(by: .seconds(1))
        #expect(held.values.first?.text == "b")
    }
}
