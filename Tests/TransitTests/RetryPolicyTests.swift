import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// A request to `/r` answered with `answers` in order (the last one repeats), through
/// `retry(policy, method:, scheduler:)`; the virtual time of every request is recorded.
private struct RetryFixture {
    let scheduler = TestScheduler()
    let transport: StubTransport
    let log = AuthRetryLog<String?>()
    let times = AuthRetryBox<[Duration]>([])
    let token: CancellationToken

    init(
        _ method: HTTPMethod = .get,
        answers: [StubResponse],
        policy: RetryPolicy,
        passMethod: HTTPMethod? = nil
    ) {
        transport = StubTransport(scheduler: scheduler)
        let scheduler = self.scheduler
        let times = self.times
        let index = AuthRetryBox(0)
        transport.stub(method, path: "/r").thenRespond { _ in
            times.mutate { $0.append(scheduler.now) }
            var current = 0
            index.mutate { current = $0; $0 += 1 }
            return answers[min(current, answers.count - 1)]
        }
        let signal = AuthRetryAPI(transport: transport).request(method: method, endpoint: "r")
            .catchHTTPErrors()
            .map(\.text)
            .retry(policy, method: passMethod, scheduler: scheduler)
        token = log.subscribe(to: signal)
    }

    var requestCount: Int { transport.requests.count }
}

/// A random source that returns `values` in order, then repeats the last.
private func sequence(_ values: [Double]) -> @Sendable () -> Double {
    let index = AuthRetryBox(0)
    return {
        var current = 0
        index.mutate { current = $0; $0 += 1 }
        return values[min(current, values.count - 1)]
    }
}

private func policy(
    maxAttempts: Int = 4,
    base: TimeInterval = 1,
    multiplier: Double = 2,
    maxDelay: TimeInterval = 100,
    jitter: RetryPolicy.Jitter = .none,
    maxWait: TimeInterval = 60,
    retryNonIdempotent: Bool = false,
    random: [Double] = [0.5]
) -> RetryPolicy {
    RetryPolicy(
        maxAttempts: maxAttempts, baseDelay: .seconds(base), multiplier: multiplier, maxDelay: .seconds(maxDelay),
        jitter: jitter, maxWait: .seconds(maxWait), retryNonIdempotent: retryNonIdempotent,
        random: sequence(random)
    )
}

@Suite struct RetryPolicyTests {
    // MARK: The formula

    @Test func theCeilingGrowsExponentiallyUpToTheMaximum() {
        let p = policy(base: 1, multiplier: 2, maxDelay: 10)
        #expect((1...6).map { p.ceiling(beforeRetry: $0) } == [1, 2, 4, 8, 10, 10].map { Duration.seconds($0) })
        #expect(p.ceiling(beforeRetry: 5000) == .seconds(10), "no overflow")
        #expect(p.ceiling(beforeRetry: 0) == .seconds(1))
    }

    @Test func jitterFollowsTheDocumentedFormulas() {
        let none = policy(base: 1, maxDelay: 10, jitter: .none, random: [0.5])
        let full = policy(base: 1, maxDelay: 10, jitter: .full, random: [0.5])
        let equal = policy(base: 1, maxDelay: 10, jitter: .equal, random: [0.5])
        #expect((1...5).map { none.backoff(beforeRetry: $0) } == [1, 2, 4, 8, 10].map { Duration.seconds($0) })
        #expect((1...5).map { full.backoff(beforeRetry: $0) } == [0.5, 1, 2, 4, 5].map { Duration.seconds($0) })
        #expect((1...5).map { equal.backoff(beforeRetry: $0) } == [0.75, 1.5, 3, 6, 7.5].map { Duration.seconds($0) })
        #expect(policy(jitter: .full, random: [0]).backoff(beforeRetry: 3) == .zero)
        #expect(policy(jitter: .equal, random: [0]).backoff(beforeRetry: 3) == .seconds(2))
    }

    @Test(arguments: [(1.5, 4.0), (-1, 0), (.nan, 0), (0.999, 3.996)] as [(Double, Double)])
    func randomValuesOutsideTheUnitIntervalAreClamped(random: Double, expected: Double) {
        #expect(policy(base: 4, jitter: .full, random: [random]).backoff(beforeRetry: 1) == .seconds(expected))
    }

    @Test func theDefaultPolicyIsDocumented() {
        let p = RetryPolicy()
        #expect(p.maxAttempts == 3 && p.baseDelay == .milliseconds(500) && p.multiplier == 2 && p.maxDelay == .seconds(30))
        #expect(p.jitter == .full && p.maxWait == .seconds(60) && !p.retryNonIdempotent)
        let r = p.random()
        #expect(r >= 0 && r < 1)
    }

    // MARK: The operator

    @Test func attemptsAreBoundedAndTheLastFailureIsPassedOn() {
        let f = RetryFixture(answers: [.status(500)], policy: policy(maxAttempts: 4))
        f.scheduler.run()
        #expect(f.times.current == [.seconds(0), .seconds(1), .seconds(3), .seconds(7)])
        #expect(statusCode(of: f.log.failure) == 500)
        #expect(f.log.terminalCount == 1)
        #expect(f.log.violations == 0)
        #expect(f.scheduler.pendingCount == 0)
        withExtendedLifetime(f.token) {}
    }

    @Test func delaysFollowTheFormulaWithTheInjectedRandom() {
        let f = RetryFixture(
            answers: [.status(503)],
            policy: policy(maxAttempts: 4, base: 2, multiplier: 3, jitter: .full, random: [0.25, 0.5, 0.75])
        )
        // Waits: 0.25 × 2, 0.5 × 6, 0.75 × 18.
        f.scheduler.advance(by: .seconds(0.5) - .nanoseconds(1))
        #expect(f.requestCount == 1, "nothing before the back-off ends")
        f.scheduler.advance(by: .nanoseconds(1))
        #expect(f.requestCount == 2)
        f.scheduler.run()
        #expect(f.times.current == [.seconds(0), .seconds(0.5), .seconds(3.5), .seconds(17)])
        #expect(statusCode(of: f.log.failure) == 503)
        withExtendedLifetime(f.token) {}
    }

    @Test func equalJitterDelays() {
        let f = RetryFixture(answers: [.status(502)], policy: policy(maxAttempts: 3, base: 2, jitter: .equal, random: [0.5]))
        f.scheduler.run()
        #expect(f.times.current == [.seconds(0), .seconds(1.5), .seconds(4.5)])
        withExtendedLifetime(f.token) {}
    }

    @Test func aTransientFailureFollowedBySuccessDeliversTheValue() {
        let f = RetryFixture(answers: [.status(502), .status(504), .status(408), .text("done")], policy: policy(maxAttempts: 4))
        f.scheduler.run()
        #expect(f.log.values == ["done"])
        #expect(f.log.isFinished)
        #expect(f.requestCount == 4)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [1, 0, -3])
    func oneAttemptOrFewerMeansNoRetry(maxAttempts: Int) {
        let f = RetryFixture(answers: [.status(500), .text("done")], policy: policy(maxAttempts: maxAttempts))
        f.scheduler.run()
        #expect(statusCode(of: f.log.failure) == 500)
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [400, 401, 403, 404, 409, 429, 501, 505])
    func nonTransientStatusesFailAtOnce(status: Int) {
        let f = RetryFixture(answers: [.status(status), .text("done")], policy: policy())
        #expect(statusCode(of: f.log.failure) == status)
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func aNonTransientErrorOfAnyKindFailsAtOnce() {
        let scheduler = TestScheduler()
        let attempts = AuthRetryBox(0)
        let log = AuthRetryLog<Int>()
        let token = log.subscribe(to: Signal<Int, any Error>(deferred: {
            attempts.mutate { $0 += 1 }
            return Signal(error: AuthRetryError(code: 3))
        }).retry(policy(), method: .get, scheduler: scheduler))
        scheduler.run()
        #expect(log.failure as? AuthRetryError == AuthRetryError(code: 3))
        #expect(attempts.current == 1)
        withExtendedLifetime(token) {}
    }

    @Test(arguments: [HTTPMethod.post, .patch, "CONNECT"])
    func nonIdempotentMethodsAreNotRetriedByDefault(method: HTTPMethod) {
        let f = RetryFixture(method, answers: [.status(503), .text("done")], policy: policy(), passMethod: method)
        f.scheduler.run()
        #expect(statusCode(of: f.log.failure) == 503)
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func nonIdempotentMethodsAreRetriedWhenTheCallerOptsIn() {
        let f = RetryFixture(.post, answers: [.status(503), .text("done")], policy: policy(retryNonIdempotent: true))
        f.scheduler.run()
        #expect(f.log.values == ["done"])
        #expect(f.transport.requests.map(\.httpMethod) == ["POST", "POST"])
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [HTTPMethod.get, .head, .put, .delete, .options])
    func idempotentMethodsAreRetried(method: HTTPMethod) {
        let f = RetryFixture(method, answers: [.status(500), .text("done")], policy: policy())
        f.scheduler.run()
        #expect(f.requestCount == 2)
        #expect(f.log.isFinished)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [URLError.Code.timedOut, .networkConnectionLost])
    func aTimeoutIsRetriedOnlyWhenTheMethodIsKnownIdempotent(code: URLError.Code) throws {
        let known = RetryFixture(.get, answers: [.failure(URLError(code)), .text("done")], policy: policy(), passMethod: .get)
        let unknown = RetryFixture(.get, answers: [.failure(URLError(code)), .text("done")], policy: policy())
        let post = RetryFixture(.post, answers: [.failure(URLError(code)), .text("done")], policy: policy(), passMethod: .post)
        let optedIn = RetryFixture(.post, answers: [.failure(URLError(code)), .text("done")], policy: policy(retryNonIdempotent: true))
        for f in [known, unknown, post, optedIn] { f.scheduler.run() }
        #expect(known.log.values == ["done"])
        #expect(unknown.log.values == ["done"], "HTTPClient fails with a TransportError that carries the request")
        #expect(unknown.requestCount == 2)
        #expect((post.log.failure as? TransportError)?.code == code)
        #expect((post.log.failure as? TransportError)?.method == .post)
        #expect(post.requestCount == 1)
        #expect(optedIn.log.values == ["done"])
        withExtendedLifetime([known.token, unknown.token, post.token, optedIn.token]) {}

        // Straight from a transport, without HTTPClient, the error does not say its method.
        let scheduler = TestScheduler()
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.failure(URLError(code))).thenRespond(.text("done"))
        let failure = Locked<(any Error)?>(nil)
        let request = URLRequest(url: try #require(URL(string: "https://api.example.test/raw")))
        let token = transport.send(request).retry(policy(), scheduler: scheduler)
            .sink(receiveCompletion: { if case .failure(let error) = $0 { failure.withLock { $0 = error } } }, receiveValue: { _ in })
        scheduler.run()
        #expect((failure.withLock { $0 } as? URLError)?.code == code, "a bare transport error does not say its method")
        #expect(transport.requests.count == 1)
        token.cancel()
    }

    @Test(arguments: [URLError.Code.cannotConnectToHost, .notConnectedToInternet, .dnsLookupFailed, .cannotFindHost])
    func errorsThatNeverReachedTheServerAreRetriedForAnyMethod(code: URLError.Code) {
        let f = RetryFixture(.post, answers: [.failure(URLError(code)), .text("done")], policy: policy())
        f.scheduler.run()
        #expect(f.log.values == ["done"])
        #expect(f.requestCount == 2)
        withExtendedLifetime(f.token) {}
    }

    @Test(arguments: [URLError.Code.cancelled, .badURL, .badServerResponse, .userAuthenticationRequired])
    func otherTransportErrorsAreNotRetried(code: URLError.Code) {
        let f = RetryFixture(.get, answers: [.failure(URLError(code)), .text("done")], policy: policy(), passMethod: .get)
        f.scheduler.run()
        #expect((f.log.failure as? TransportError)?.code == code)
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func a503RetryAfterLongerThanTheBackoffIsWaitedExactly() {
        let f = RetryFixture(answers: [.status(503, headers: ["Retry-After": "10"]), .text("done")], policy: policy(base: 1))
        f.scheduler.advance(by: .seconds(10) - .nanoseconds(1))
        #expect(f.requestCount == 1)
        f.scheduler.advance(by: .nanoseconds(1))
        #expect(f.requestCount == 2)
        #expect(f.log.values == ["done"])
        withExtendedLifetime(f.token) {}
    }

    @Test func aBackoffLongerThanThe503RetryAfterWins() {
        let f = RetryFixture(answers: [.status(503, headers: ["Retry-After": "1"]), .text("done")], policy: policy(base: 4))
        f.scheduler.run()
        #expect(f.times.current == [.seconds(0), .seconds(4)])
        withExtendedLifetime(f.token) {}
    }

    @Test func a503RetryAfterBeyondTheCapFailsAtOnce() {
        let f = RetryFixture(answers: [.status(503, headers: ["Retry-After": "120"]), .text("done")], policy: policy(maxWait: 60))
        guard case .serviceUnavailable(let retryAfter, _)? = f.log.failure as? HTTPServerError else {
            Issue.record("expected a 503, got \(String(describing: f.log.failure))")
            return
        }
        #expect(retryAfter == .seconds(120))
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        withExtendedLifetime(f.token) {}
    }

    @Test func retryAfterIsOnlyHonouredOn503() {
        let f = RetryFixture(answers: [.status(500, headers: ["Retry-After": "30"]), .text("done")], policy: policy(base: 1))
        f.scheduler.run()
        #expect(f.times.current == [.seconds(0), .seconds(1)])
        withExtendedLifetime(f.token) {}
    }

    @Test func cancellingDuringTheBackoffSendsNothingAndLeavesNothingScheduled() {
        let f = RetryFixture(answers: [.status(500), .text("done")], policy: policy(base: 5))
        f.scheduler.advance(by: .seconds(2))
        #expect(f.scheduler.pendingCount == 1)
        f.token.cancel()
        #expect(f.scheduler.pendingCount == 0)
        f.scheduler.run()
        #expect(f.requestCount == 1)
        #expect(f.log.events.isEmpty)
    }

    // MARK: Classification

    @Test(arguments: [408, 500, 502, 503, 504])
    func transientStatuses(status: Int) throws {
        let error = try #require(HTTPClientError(statusCode: status) as (any HTTPError)? ?? HTTPServerError(statusCode: status))
        #expect(RetryPolicy().isTransient(error))
    }

    @Test(arguments: [400, 401, 404, 429, 501, 505, 599])
    func nonTransientStatuses(status: Int) throws {
        let error = try #require(HTTPClientError(statusCode: status) as (any HTTPError)? ?? HTTPServerError(statusCode: status))
        #expect(!RetryPolicy().isTransient(error))
    }

    @Test func theDefaultSetsHoldTheDocumentedEntries() {
        #expect(RetryPolicy().retryableStatusCodes == [408, 500, 502, 503, 504])
        #expect(RetryPolicy().retryableMethods == [.get, .head, .options, "TRACE", .put, .delete])
        #expect(RetryPolicy().retryableURLErrorCodes == [
            .timedOut, .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .dnsLookupFailed, .cannotFindHost,
        ])
        #expect(RetryPolicy().retryableMethods.allSatisfy { $0.isIdempotent })
    }

    @Test func aCustomStatusSetChangesWhatIsRetried() {
        var custom = policy(maxAttempts: 2)
        custom.retryableStatusCodes = [429, 500]
        let added = RetryFixture(answers: [.status(429), .text("done")], policy: custom)
        added.scheduler.run()
        #expect(added.times.current == [.seconds(0), .seconds(1)])
        #expect(added.log.values == ["done"])

        var narrowed = policy(maxAttempts: 2)
        narrowed.retryableStatusCodes = [500]
        let removed = RetryFixture(answers: [.status(503), .text("done")], policy: narrowed)
        removed.scheduler.run()
        #expect(removed.requestCount == 1)
        #expect(statusCode(of: removed.log.failure) == 503)
    }

    @Test func aCustomMethodSetChangesWhatIsRetried() {
        var custom = policy(maxAttempts: 2)
        custom.retryableMethods = [.get, .post]
        let post = RetryFixture(.post, answers: [.status(500), .text("done")], policy: custom)
        post.scheduler.run()
        #expect(post.times.current == [.seconds(0), .seconds(1)])
        #expect(post.log.values == ["done"])

        custom.retryableMethods = [.post]
        let get = RetryFixture(.get, answers: [.status(500), .text("done")], policy: custom)
        get.scheduler.run()
        #expect(get.requestCount == 1)
        #expect(statusCode(of: get.log.failure) == 500)
    }

    @Test func aCustomURLErrorSetChangesWhatIsRetried() {
        var custom = policy(maxAttempts: 2)
        custom.retryableURLErrorCodes = [.secureConnectionFailed]
        let added = RetryFixture(.get, answers: [.failure(URLError(.secureConnectionFailed)), .text("done")], policy: custom, passMethod: .get)
        added.scheduler.run()
        #expect(added.times.current == [.seconds(0), .seconds(1)])
        #expect(added.log.values == ["done"])

        let removed = RetryFixture(.get, answers: [.failure(URLError(.timedOut)), .text("done")], policy: custom, passMethod: .get)
        removed.scheduler.run()
        #expect(removed.requestCount == 1)
        #expect((removed.log.failure as? TransportError)?.code == .timedOut)
    }

    @Test func anHTTPErrorWithoutAResponseUsesTheGivenMethod() {
        let p = policy()
        let error = HTTPServerError.internalServerError()
        #expect(p.retryDelay(after: error, attempt: 1) == nil, "unknown method: not retried")
        #expect(p.retryDelay(after: error, attempt: 1, method: .get) == .seconds(1))
        #expect(p.retryDelay(after: error, attempt: 1, method: .post) == nil)
        #expect(p.retryDelay(after: error, attempt: 4, method: .get) == nil, "no attempts left")
    }
}
