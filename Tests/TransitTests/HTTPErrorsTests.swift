import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Status codes with a named case (RFC 9110, 6585, 4918, 8470, 7725, 2295, 2774); every other
/// code from 400 to 599 must map to `.other`.
private let namedClientCodes: Set<Int> = Set(400...417).union([421, 422, 423, 424, 426, 428, 429, 431, 451])
private let namedServerCodes: Set<Int> = Set(500...508).union([510, 511])

private extension HTTPClientError {
    var isOther: Bool { if case .other = self { return true } else { return false } }
}

private extension HTTPServerError {
    var isOther: Bool { if case .other = self { return true } else { return false } }
}

@Suite("catchHTTPErrors and the HTTP error types")
struct HTTPErrorsTests {
    /// Answers `GET /v1/status/<code>` with that status code.
    let transport: StubTransport = {
        let transport = StubTransport()
        transport.stub { $0.url?.path.hasPrefix("/v1/status/") == true }.thenRespond { request in
            let code = Int(request.url?.lastPathComponent ?? "") ?? 0
            return .text("body of \(code)", status: code, headers: ["X-Status": "\(code)"])
        }
        return transport
    }()

    var api: StubbedService { StubbedService(transport: transport) }

    private func failure(for code: Int) -> (any Error)? {
        let probe = RequestProbe(api.get(endpoint: "status/\(code)").catchHTTPErrors())
        #expect(probe.terminalCount == 1)
        #expect(probe.values.isEmpty)
        return probe.failure
    }

    @Test("every 4xx fails with HTTPClientError: named codes with their case, others with .other")
    func everyClientCode() throws {
        var named = 0
        for code in 400...499 {
            let error = try #require(failure(for: code) as? HTTPClientError, "status \(code)")
            #expect(error.statusCode == code)
            #expect(error.isOther == !namedClientCodes.contains(code), "status \(code) mapped to \(error)")
            #expect(HTTPClientError(statusCode: code) == error)
            if !error.isOther { named += 1 }
        }
        #expect(named == namedClientCodes.count)
        #expect(transport.requests.count == 100)
    }

    @Test("every 5xx fails with HTTPServerError: named codes with their case, others with .other")
    func everyServerCode() throws {
        for code in 500...599 {
            let error = try #require(failure(for: code) as? HTTPServerError, "status \(code)")
            #expect(error.statusCode == code)
            #expect(error.isOther == !namedServerCodes.contains(code), "status \(code) mapped to \(error)")
        }
    }

    @Test("unnamed codes map to .other with their status code", arguments: [418, 420, 425, 427, 499, 509, 520, 599])
    func unnamedCodes(code: Int) throws {
        let error = try #require(failure(for: code) as? any HTTPError)
        #expect(error.statusCode == code)
        if code < 500 {
            #expect(error as? HTTPClientError == .other(statusCode: code))
            #expect((error as? HTTPClientError)?.isOther == true)
        } else {
            #expect(error as? HTTPServerError == .other(statusCode: code))
            #expect((error as? HTTPServerError)?.isOther == true)
        }
    }

    @Test("named cases carry their reason phrase", arguments: [
        (404, "Not Found"), (429, "Too Many Requests"), (451, "Unavailable For Legal Reasons"),
        (500, "Internal Server Error"), (503, "Service Unavailable"), (511, "Network Authentication Required"),
    ])
    func reasonPhrases(code: Int, phrase: String) throws {
        let error = try #require(failure(for: code) as? any HTTPError)
        #expect(error.reasonPhrase == phrase)
    }

    @Test("codes above 599 fail as HTTPServerError.other")
    func beyond599() throws {
        let error = try #require(failure(for: 600) as? HTTPServerError)
        #expect(error == .other(statusCode: 600))
        #expect(HTTPClientError(statusCode: 600) == nil)
        #expect(HTTPServerError(statusCode: 399) == nil)
        #expect(HTTPClientError(statusCode: 399) == nil)
    }

    @Test("2xx and 3xx pass through catchHTTPErrors unchanged")
    func successAndRedirectPass() throws {
        for code in 200...399 {
            let probe = RequestProbe(api.get(endpoint: "status/\(code)").catchHTTPErrors())
            #expect(probe.isFinished, "status \(code)")
            #expect(probe.values.map(\.statusCode) == [code])
            #expect(probe.values.first?.text == "body of \(code)")
        }
    }

    // MARK: Equality and matching

    @Test("errors compare equal by status code, whatever their Retry-After and response")
    func equalityByStatusCode() throws {
        let response = makeResponse(status: 429, headers: ["Retry-After": "5"])
        #expect(HTTPClientError.tooManyRequests() == .tooManyRequests(retryAfter: .seconds(5), response: response))
        #expect(HTTPClientError.notFound() == .notFound(response: makeResponse(status: 404)))
        #expect(HTTPClientError.notFound() != .tooManyRequests())
        #expect(HTTPClientError.other(statusCode: 418) != .other(statusCode: 420))
        #expect(HTTPClientError.other(statusCode: 418) == .other(statusCode: 418, response: makeResponse(status: 418)))
        #expect(HTTPServerError.serviceUnavailable() == .serviceUnavailable(retryAfter: .seconds(30)))
        #expect(HTTPServerError.badGateway() != .gatewayTimeout())
        #expect(Set([HTTPClientError.tooManyRequests(), .tooManyRequests(retryAfter: .seconds(1))]).count == 1)
        #expect(HTTPClientError.tooManyRequests().hashValue == HTTPClientError.tooManyRequests(retryAfter: .seconds(9), response: response).hashValue)
    }

    @Test("tryCatch(HTTPClientError.tooManyRequests()) matches any 429 and nothing else")
    func tryCatchMatchesByCode() throws {
        let transport = StubTransport()
        transport.stub(path: "/v1/limited").thenRespond(.status(429, headers: ["Retry-After": "12"]))
        transport.stub(path: "/v1/missing").thenRespond(.status(404))
        let api = StubbedService(transport: transport)
        func fetch(_ endpoint: String) -> RequestProbe<String, any Error> {
            RequestProbe(
                api.get(endpoint: endpoint)
                    .catchHTTPErrors()
                    .map { $0.text ?? "" }
                    .tryCatch(HTTPClientError.tooManyRequests()) { error in
                        Signal(value: "fallback after \(error.retryAfter?.timeInterval ?? -1) s")
                    }
            )
        }
        let limited = fetch("limited")
        #expect(limited.values == ["fallback after 12.0 s"])
        #expect(limited.isFinished)

        let missing = fetch("missing")
        #expect(missing.values.isEmpty)
        #expect(missing.failure as? HTTPClientError == .notFound())
        #expect(missing.terminalCount == 1)
    }

    @Test("a server-error matcher does not catch a client error with another code")
    func tryCatchDoesNotCrossTypes() throws {
        let probe = RequestProbe(
            api.get(endpoint: "status/429")
                .catchHTTPErrors()
                .tryCatch(HTTPServerError.serviceUnavailable()) { _ in Signal(value: makeResponse(status: 200)) }
        )
        #expect(probe.failure as? HTTPClientError == .tooManyRequests())
    }

    // MARK: What the error exposes

    @Test("the error exposes the response headers, body and request")
    func exposesResponse() throws {
        let transport = StubTransport()
        transport.stub(.post, path: "/v1/posts").thenRespond(
            .json(#"{"error":"title is required"}"#, status: 422, headers: ["X-Request-Id": "abc-123"])
        )
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.post(endpoint: "posts", body: Data("{}".utf8)).catchHTTPErrors())
        let error = try #require(probe.failure as? HTTPClientError)
        #expect(error == .unprocessableContent())
        #expect(error.response?.data == Data(#"{"error":"title is required"}"#.utf8))
        #expect(error.response?.value(forHTTPHeaderField: "x-request-id") == "abc-123")
        #expect(error.response?.head.allHeaderFields["X-Request-Id"] == "abc-123")
        #expect(error.response?.head.allHeaderFields["Content-Type"] == "application/json")
        #expect(error.response?.request.httpMethod == "POST")
        #expect(error.response?.request.url?.absoluteString == "https://api.example.com/v1/posts")
    }

    @Test("the description names the status, the request and the start of the body")
    func description() throws {
        let transport = StubTransport()
        transport.stub(path: "/v1/posts/9").thenRespond(.text("no post with id 9", status: 404))
        transport.stub(path: "/v1/big").thenRespond(.text(String(repeating: "x", count: 500), status: 500))
        let api = StubbedService(transport: transport)

        let notFound = try #require(RequestProbe(api.get(endpoint: "posts/9").catchHTTPErrors()).failure as? HTTPClientError)
        #expect(notFound.description == "HTTP 404 Not Found for GET https://api.example.com/v1/posts/9: no post with id 9")
        #expect(notFound.localizedDescription == notFound.description)
        #expect("\(notFound)" == notFound.description)

        let big = try #require(RequestProbe(api.get(endpoint: "big").catchHTTPErrors()).failure as? HTTPServerError)
        #expect(big.description == "HTTP 500 Internal Server Error for GET https://api.example.com/v1/big: " + String(repeating: "x", count: 200) + "…")

        #expect(HTTPClientError.badRequest().description == "HTTP 400 Bad Request")
        #expect(HTTPClientError.other(statusCode: 418).description.hasPrefix("HTTP 418"))
    }

    @Test("the description of a 429 or 503 includes the Retry-After")
    func descriptionWithRetryAfter() throws {
        let limited = HTTPClientError(statusCode: 429, response: makeResponse(status: 429, headers: ["Retry-After": "5"]))
        #expect(limited?.description == "HTTP 429 Too Many Requests for GET https://api.example.com/v1/things (retry after 5 s)")
        let unavailable = HTTPServerError.serviceUnavailable(retryAfter: .seconds(1.5))
        #expect(unavailable.description == "HTTP 503 Service Unavailable (retry after 1.5 s)")
        // Values a parser never produces still describe without trapping.
        #expect(HTTPServerError.serviceUnavailable(retryAfter: .seconds(-1e20)).description.hasPrefix("HTTP 503"))
        #expect(HTTPClientError.tooManyRequests(retryAfter: Duration(attoseconds: .max)).description.hasPrefix("HTTP 429"))
        #expect(HTTPClientError.tooManyRequests(retryAfter: Duration(attoseconds: .min)).description.hasPrefix("HTTP 429"))
    }

    // MARK: Retry-After on the error

    @Test("a 429 carries its Retry-After in .tooManyRequests(retryAfter:)")
    func tooManyRequestsRetryAfter() throws {
        let transport = StubTransport()
        transport.stub(path: "/v1/a").thenRespond(.status(429, headers: ["Retry-After": "5"]))
        transport.stub(path: "/v1/b").thenRespond(.status(429, headers: ["retry-after": "2.5"]))
        transport.stub(path: "/v1/c").thenRespond(.status(429))
        transport.stub(path: "/v1/d").thenRespond(.status(429, headers: ["Retry-After": "soon"]))
        transport.stub(path: "/v1/e").thenRespond(.status(429, headers: ["Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"]))
        let api = StubbedService(transport: transport)
        func retryAfter(_ endpoint: String) throws -> Duration? {
            let error = try #require(RequestProbe(api.get(endpoint: endpoint).catchHTTPErrors()).failure as? HTTPClientError)
            guard case .tooManyRequests(let retryAfter, let response) = error else {
                Issue.record("expected .tooManyRequests, got \(error)")
                return nil
            }
            #expect(response?.statusCode == 429)
            #expect(error.retryAfter == retryAfter)
            return retryAfter
        }
        #expect(try retryAfter("a") == .seconds(5))
        #expect(try retryAfter("b") == .seconds(2.5))
        #expect(try retryAfter("c") == nil)
        #expect(try retryAfter("d") == nil)
        #expect(try retryAfter("e") == .zero, "a date in the past means now")
    }

    @Test("a 503 carries its Retry-After in .serviceUnavailable(retryAfter:)")
    func serviceUnavailableRetryAfter() throws {
        let transport = StubTransport()
        transport.stub(path: "/v1/a").thenRespond(.status(503, headers: ["Retry-After": "120"]))
        transport.stub(path: "/v1/b").thenRespond(.status(503))
        let api = StubbedService(transport: transport)
        let withHeader = try #require(RequestProbe(api.get(endpoint: "a").catchHTTPErrors()).failure as? HTTPServerError)
        guard case .serviceUnavailable(let retryAfter, _) = withHeader else {
            Issue.record("expected .serviceUnavailable, got \(withHeader)")
            return
        }
        #expect(retryAfter == .seconds(120))
        #expect(withHeader.retryAfter == .seconds(120))
        let without = try #require(RequestProbe(api.get(endpoint: "b").catchHTTPErrors()).failure as? HTTPServerError)
        #expect(without.retryAfter == nil)
    }

    @Test("other codes carry no retryAfter even when the server sends the header", arguments: [404, 500, 502])
    func noRetryAfterElsewhere(code: Int) throws {
        let response = makeResponse(status: code, headers: ["Retry-After": "5"])
        let error = try #require(makeHTTPError(for: response))
        #expect(error.retryAfter == nil)
        #expect(error.response?.value(forHTTPHeaderField: "Retry-After") == "5")
    }
}
