import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

private struct Payload: Codable, Equatable {
    var name: String
    var count: Int
}

/// What happened when a request went through an ``HTTPClient`` over a ``StubTransport`` that
/// answers every request with 200: how the signal ended and what reached the transport.
private struct SendOutcome {
    var failure: (any Error)?
    var isFinished: Bool
    var terminalCount: Int
    var sent: [URLRequest]

    /// The failure as a ``URLRequestError``, or `nil` if it is something else or there is none.
    var requestError: URLRequestError? { failure as? URLRequestError }
}

/// A transport that would answer any request with 200 `ok`, so that a request that is refused
/// could only fail because Transit refused it.
private func makeAnsweringTransport() -> StubTransport {
    let transport = StubTransport()
    transport.stub().thenRespond(.text("ok"))
    return transport
}

/// Sends `request` with `HTTPClient.send` (default headers included) over a fresh stub.
private func sendThroughClient(_ request: URLRequest, defaultHeaders: [String: String] = [:]) -> SendOutcome {
    let transport = makeAnsweringTransport()
    let client = HTTPClient(transport: transport, defaultHeaders: defaultHeaders, userAgent: "FluentTests")
    let probe = RequestProbe(client.send(request))
    return SendOutcome(failure: probe.failure, isFinished: probe.isFinished, terminalCount: probe.terminalCount, sent: transport.requests)
}

/// Sends `GET items` through a ``RESTAPI`` whose modifier is `modifier`, over a fresh stub.
private func sendThroughAPI(
    defaultHeaders: [String: String] = [:],
    _ modifier: @escaping RequestModifier
) -> SendOutcome {
    let transport = makeAnsweringTransport()
    let api = StubbedService(transport: transport, defaultHeaders: defaultHeaders)
    let probe = RequestProbe(api.get(endpoint: "items", modifier: modifier))
    return SendOutcome(failure: probe.failure, isFinished: probe.isFinished, terminalCount: probe.terminalCount, sent: transport.requests)
}

/// `true` if `error` is `.invalidTimeout(seconds)`, treating NaN as equal to NaN (the
/// synthesized `==` does not).
private func isInvalidTimeout(_ error: URLRequestError?, _ seconds: Double) -> Bool {
    guard case .invalidTimeout(let refused)? = error else { return false }
    return refused == seconds || (refused.isNaN && seconds.isNaN)
}

@Suite("Fluent URLRequest helpers")
struct URLRequestFluentTests {
    let original = URLRequest(url: URL(string: "https://api.example.com/v1/items?page=2")!)

    @Test("every helper returns a modified copy and leaves the receiver untouched")
    func nonMutating() throws {
        let before = original
        _ = original.addingValue("a", forHTTPHeaderField: "X-A")
        _ = original.settingValue("b", forHTTPHeaderField: "X-B")
        _ = original.addingBearerAuthorization(accessToken: "t")
        _ = original.receivingJSON()
        _ = try original.sendingJSON(Payload(name: "n", count: 1))
        _ = original.sendingBody(Data("x".utf8), contentType: "text/plain")
        _ = original.addingQueryItem(name: "q", value: "1")
        _ = original.withTimeout(5)
        _ = original.withMethod(.post)
        _ = original.withCachePolicy(.reloadIgnoringLocalCacheData)
        // Refused input is remembered on the copy, never on the receiver.
        _ = original.addingValue("a\r\n", forHTTPHeaderField: "X-A")
        _ = original.settingValue("b", forHTTPHeaderField: "X B")
        _ = original.addingBearerAuthorization(accessToken: "")
        _ = original.withTimeout(0)
        _ = original.withMethod("GE T")
        #expect(original == before)
        #expect(original.allHTTPHeaderFields?.isEmpty ?? true)
        #expect(original.url?.absoluteString == "https://api.example.com/v1/items?page=2")
        #expect(original.httpBody == nil)
        #expect(original.httpMethod == "GET")
        #expect(original.rejectedInput == nil)
    }

    @Test("addingValue appends like URLRequest.addValue; settingValue replaces, case-insensitively")
    func addAndSet() throws {
        let added = original
            .addingValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            .addingValue("br", forHTTPHeaderField: "accept-encoding")
        var reference = original
        reference.addValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        reference.addValue("br", forHTTPHeaderField: "accept-encoding")
        let value = try #require(added.value(forHTTPHeaderField: "Accept-Encoding"))
        #expect(value == reference.value(forHTTPHeaderField: "Accept-Encoding"))
        #expect(value.contains("gzip") && value.contains("br"))

        let set = added.settingValue("identity", forHTTPHeaderField: "ACCEPT-ENCODING")
        #expect(set.value(forHTTPHeaderField: "Accept-Encoding") == "identity")
        #expect(added.rejectedInput == nil)
        #expect(set.rejectedInput == nil)
    }

    @Test("tabs, spaces and non-ASCII text are valid header values")
    func permittedValues() throws {
        let request = original
            .settingValue("a\tb c", forHTTPHeaderField: "X-Spaced")
            .settingValue("caf\u{e9}", forHTTPHeaderField: "X-Latin")
            .settingValue("", forHTTPHeaderField: "X-Empty")
        #expect(request.value(forHTTPHeaderField: "X-Spaced") == "a\tb c")
        #expect(request.value(forHTTPHeaderField: "X-Latin") == "caf\u{e9}")
        #expect(request.rejectedInput == nil)
        let outcome = sendThroughClient(request)
        #expect(outcome.isFinished)
        #expect(outcome.sent.first?.value(forHTTPHeaderField: "X-Spaced") == "a\tb c")
    }

    @Test("header values with CR, LF, NUL or other control characters are rejected (header injection)",
          arguments: ["v\r\nX-Injected: 1", "v\nX-Injected: 1", "v\r", "a\u{0}b", "bell\u{7}", "del\u{7F}"])
    func headerInjectionRejected(value: String) throws {
        let added = original.addingValue(value, forHTTPHeaderField: "X-Trace")
        let set = original.settingValue(value, forHTTPHeaderField: "X-Trace")
        let body = original.sendingBody(Data(), contentType: value)
        #expect(added.rejectedInput == .invalidHeaderValue(name: "X-Trace"))
        #expect(set.rejectedInput == .invalidHeaderValue(name: "X-Trace"))
        #expect(body.rejectedInput == .invalidHeaderValue(name: "Content-Type"))
        // The refused value is not set.
        #expect(added.value(forHTTPHeaderField: "X-Trace") == nil)
        #expect(set.value(forHTTPHeaderField: "X-Trace") == nil)
        #expect(body.value(forHTTPHeaderField: "Content-Type") == nil)

        // Sent, each fails with exactly that error and nothing reaches the transport.
        for (request, expected) in [
            (added, URLRequestError.invalidHeaderValue(name: "X-Trace")),
            (set, .invalidHeaderValue(name: "X-Trace")),
            (body, .invalidHeaderValue(name: "Content-Type")),
        ] {
            let outcome = sendThroughClient(request)
            #expect(outcome.requestError == expected)
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
        let viaAPI = sendThroughAPI { $0.settingValue(value, forHTTPHeaderField: "X-Trace") }
        #expect(viaAPI.requestError == .invalidHeaderValue(name: "X-Trace"))
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("header names that are not tokens are rejected",
          arguments: ["", "X Trace", "X-Trace:", "X-Trace\r\nX-Injected", "Caf\u{e9}", "(x)", "a/b"])
    func invalidHeaderNames(name: String) throws {
        let added = original.addingValue("v", forHTTPHeaderField: name)
        let set = original.settingValue("v", forHTTPHeaderField: name)
        #expect(added.rejectedInput == .invalidHeaderName(name))
        #expect(set.rejectedInput == .invalidHeaderName(name))

        for request in [added, set] {
            let outcome = sendThroughClient(request)
            #expect(outcome.requestError == .invalidHeaderName(name))
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
        let viaAPI = sendThroughAPI { $0.addingValue("v", forHTTPHeaderField: name) }
        #expect(viaAPI.requestError == .invalidHeaderName(name))
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("the header error explains the problem without repeating the value (it may be a secret)")
    func headerErrorDescription() throws {
        let error = URLRequestError.invalidHeaderValue(name: "Authorization")
        #expect(error.description.contains("Authorization"))
        #expect(error.description.contains("control character"))
        #expect(error.localizedDescription == error.description)
        #expect(URLRequestError.invalidHeaderName("X Y").description.contains("\"X Y\""))
    }

    @Test("addingBearerAuthorization sets Authorization: Bearer <token>, replacing any earlier one")
    func bearer() throws {
        let request = original
            .settingValue("Basic abc", forHTTPHeaderField: "authorization")
            .addingBearerAuthorization(accessToken: "eyJhbGciOi.J9-_~+/=")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer eyJhbGciOi.J9-_~+/=")
        #expect(request.allHTTPHeaderFields?.count == 1)
        #expect(request.rejectedInput == nil)
    }

    @Test("an empty token or one with whitespace or control characters is rejected",
          arguments: ["", "abc\n", "abc def", " abc", "abc\r\nX-Injected: 1", "a\tb"])
    func invalidBearer(token: String) throws {
        let refused = original.addingBearerAuthorization(accessToken: token)
        #expect(refused.rejectedInput == .invalidBearerToken)
        #expect(refused.value(forHTTPHeaderField: "Authorization") == nil)

        let direct = sendThroughClient(refused)
        #expect(direct.requestError == .invalidBearerToken)
        #expect(direct.sent.isEmpty)
        let viaAPI = sendThroughAPI { $0.addingBearerAuthorization(accessToken: token).receivingJSON() }
        #expect(viaAPI.requestError == .invalidBearerToken)
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("a refused bearer token never appears in the error, the request or what is sent")
    func refusedBearerTokenDoesNotLeak() throws {
        let secret = "s3cr3t-T0ken-4f9a"
        let token = secret + "\n"
        let refused = original.addingBearerAuthorization(accessToken: token)
        let error = try #require(refused.rejectedInput)
        for text in [error.description, error.localizedDescription, String(reflecting: error), "\(error)"] {
            #expect(!text.contains(secret))
        }
        // Not in any header of the refused copy, even in the encoded form of a remembered error.
        for value in (refused.allHTTPHeaderFields ?? [:]).values {
            #expect(!value.contains(secret))
            let decoded = Data(base64Encoded: value).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(!decoded.contains(secret))
        }

        // Through a RESTAPI whose token is refused on the first subscription and valid on the
        // second: only the second request is recorded, and no recorded request carries the secret.
        let transport = makeAnsweringTransport()
        let api = StubbedService(transport: transport)
        let current = SharedValue(token)
        let signal = api.get(endpoint: "me") { $0.addingBearerAuthorization(accessToken: current.value) }
        let first = RequestProbe(signal)
        let failure = try #require(first.failure)
        #expect(failure as? URLRequestError == .invalidBearerToken)
        #expect(!String(describing: failure).contains(secret))
        #expect(!failure.localizedDescription.contains(secret))
        #expect(transport.requests.isEmpty)

        current.value = "fresh-token"
        let second = RequestProbe(signal)
        #expect(second.isFinished)
        #expect(transport.requests.count == 1)
        for request in transport.requests {
            #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh-token")
            for value in (request.allHTTPHeaderFields ?? [:]).values {
                #expect(!value.contains(secret))
            }
            #expect(!(request.url?.absoluteString.contains(secret) ?? false))
        }
    }

    @Test("receivingJSON sets Accept: application/json, replacing any Accept")
    func receivingJSON() throws {
        let request = original.settingValue("text/html", forHTTPHeaderField: "accept").receivingJSON()
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.allHTTPHeaderFields?.count == 1)
    }

    @Test("sendingJSON encodes the body and sets Content-Type: application/json")
    func sendingJSON() throws {
        let payload = Payload(name: "a+b & c", count: 3)
        let request = try original.sendingJSON(payload)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(Payload.self, from: try #require(request.httpBody)) == payload)
    }

    @Test("sendingJSON uses the given encoder")
    func sendingJSONWithEncoder() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let request = try original.sendingJSON(Payload(name: "n", count: 1), encoder: encoder)
        #expect(request.httpBody == Data(#"{"count":1,"name":"n"}"#.utf8))
    }

    @Test("sendingJSON throws the encoder's error for a value it cannot encode")
    func sendingJSONFailure() throws {
        #expect(throws: EncodingError.self) {
            try original.sendingJSON(["x": Double.infinity])
        }
    }

    @Test("sendingBody sets the body and the content type")
    func sendingBody() throws {
        let data = Data([0, 1, 2, 255])
        let request = original.sendingBody(data, contentType: "application/octet-stream")
        #expect(request.httpBody == data)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
        #expect(request.rejectedInput == nil)
    }

    // MARK: Query items

    @Test("query items are appended after the existing query, fully percent-encoded")
    func queryItems() throws {
        let request = original
            .addingQueryItem(name: "q", value: "a+b&c=d é/?#%")
            .addingQueryItems([URLQueryItem(name: "flag", value: nil), URLQueryItem(name: "sp ace", value: "")])
        let url = try #require(request.url)
        #expect(url.query == "page=2&q=a%2Bb%26c%3Dd%20%C3%A9%2F%3F%23%25&flag&sp%20ace=")
        #expect(url.path == "/v1/items")
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems
        #expect(items == [
            URLQueryItem(name: "page", value: "2"),
            URLQueryItem(name: "q", value: "a+b&c=d é/?#%"),
            URLQueryItem(name: "flag", value: nil),
            URLQueryItem(name: "sp ace", value: ""),
        ])
    }

    @Test("the existing query is kept byte for byte, and a fragment stays a fragment")
    func queryKeepsExistingAndFragment() throws {
        let request = URLRequest(url: URL(string: "https://h.example.com/p?a=%2B&b=x+y#frag")!)
        let url = try #require(request.addingQueryItem(name: "c", value: "1").url)
        #expect(url.absoluteString == "https://h.example.com/p?a=%2B&b=x+y&c=1#frag")
    }

    @Test("a URL without a query, or with an empty one, gets just the new items")
    func queryOnBareURL() throws {
        let bare = URLRequest(url: URL(string: "https://h.example.com/p")!)
        #expect(bare.addingQueryItem(name: "a", value: "1").url?.absoluteString == "https://h.example.com/p?a=1")
        let empty = URLRequest(url: URL(string: "https://h.example.com/p?")!)
        #expect(empty.addingQueryItem(name: "a", value: "1").url?.absoluteString == "https://h.example.com/p?a=1")
        #expect(bare.addingQueryItems([]).url == bare.url)
        #expect(bare.addingQueryItems([]).rejectedInput == nil)
    }

    @Test("adding query items to a request without a URL is refused with invalidURL")
    func queryWithoutURL() throws {
        var request = original
        request.url = nil
        let refused = request.addingQueryItem(name: "a", value: "1")
        #expect(refused.rejectedInput == .invalidURL)
        #expect(refused.url == nil)
        #expect(request.addingQueryItems([]).rejectedInput == .invalidURL)
        #expect(URLRequestError.invalidURL.description.contains("no valid URL"))

        let direct = sendThroughClient(refused)
        #expect(direct.requestError == .invalidURL)
        #expect(direct.sent.isEmpty)
        let viaAPI = sendThroughAPI { request in
            var copy = request
            copy.url = nil
            return copy.addingQueryItem(name: "a", value: "1")
        }
        #expect(viaAPI.requestError == .invalidURL)
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("every helper on a request without a URL returns without a crash, and the request fails with invalidURL")
    func helpersOnRequestWithoutURL() throws {
        var request = original
        request.url = nil
        #expect(request.rejectedInput == .invalidURL)
        let results = [
            request.addingValue("a", forHTTPHeaderField: "X-A"),
            request.settingValue("b", forHTTPHeaderField: "X-B"),
            request.addingBearerAuthorization(accessToken: "t"),
            request.receivingJSON(),
            try request.sendingJSON(Payload(name: "n", count: 1)),
            request.sendingBody(Data("x".utf8), contentType: "text/plain"),
            request.addingQueryItem(name: "q", value: "1"),
            request.withTimeout(5),
            request.withMethod(.post),
            request.withCachePolicy(.reloadIgnoringLocalCacheData),
            request.withTimeout(.nan).addingBearerAuthorization(accessToken: ""),
        ]
        for result in results {
            #expect(result.url == nil)
            #expect(result.rejectedInput == .invalidURL)
            let outcome = sendThroughClient(result, defaultHeaders: ["X-Default": "1"])
            #expect(outcome.requestError == .invalidURL)
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
        // A refusal remembered before the URL was removed is still the first one.
        var earlier = original.withMethod("GE T")
        earlier.url = nil
        #expect(earlier.rejectedInput == .invalidMethod("GE T"))
        #expect(sendThroughClient(earlier).requestError == .invalidMethod("GE T"))
    }

    // MARK: Timeout, method, cache policy

    @Test("withTimeout sets the timeout interval")
    func timeout() throws {
        #expect(original.withTimeout(12.5).timeoutInterval == 12.5)
        #expect(original.withTimeout(12.5).rejectedInput == nil)
    }

    @Test("a timeout that is not a finite number above zero is rejected",
          arguments: [0, -1, Double.nan, Double.infinity, -Double.infinity])
    func invalidTimeout(seconds: Double) throws {
        let refused = original.withTimeout(seconds)
        #expect(isInvalidTimeout(refused.rejectedInput, seconds), "got \(String(describing: refused.rejectedInput))")
        #expect(refused.timeoutInterval == original.timeoutInterval)

        let direct = sendThroughClient(refused)
        #expect(isInvalidTimeout(direct.requestError, seconds), "got \(String(describing: direct.failure))")
        #expect(direct.sent.isEmpty)
        let viaAPI = sendThroughAPI { $0.withTimeout(seconds) }
        #expect(isInvalidTimeout(viaAPI.requestError, seconds), "got \(String(describing: viaAPI.failure))")
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("withMethod sets the method; a method that is not a token is rejected")
    func method() throws {
        #expect(original.withMethod(.patch).httpMethod == "PATCH")
        #expect(original.withMethod("purge").httpMethod == "PURGE")
        #expect(original.withMethod(.patch).rejectedInput == nil)
        #expect(original.withMethod("GE T").rejectedInput == .invalidMethod("GE T"))
        #expect(original.withMethod("").rejectedInput == .invalidMethod(""))
        #expect(original.withMethod("GE T").httpMethod == "GET")

        for method: HTTPMethod in ["GE T", ""] {
            let outcome = sendThroughClient(original.withMethod(method))
            #expect(outcome.requestError == .invalidMethod(method.rawValue))
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
        let viaAPI = sendThroughAPI { $0.withMethod("GE T") }
        #expect(viaAPI.requestError == .invalidMethod("GE T"))
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("withCachePolicy sets the cache policy")
    func cachePolicy() throws {
        #expect(original.withCachePolicy(.reloadIgnoringLocalCacheData).cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(original.withCachePolicy(.returnCacheDataDontLoad).cachePolicy == .returnCacheDataDontLoad)
    }

    @Test("helpers chain under one try, which only sendingJSON needs, as in a request modifier")
    func chaining() throws {
        let modifier: @Sendable (URLRequest) throws -> URLRequest = {
            try $0.addingBearerAuthorization(accessToken: "t0k")
                .receivingJSON()
                .sendingJSON(Payload(name: "n", count: 2))
                .addingQueryItem(name: "v", value: "2")
                .withTimeout(3)
                .withMethod(.put)
                .withCachePolicy(.reloadIgnoringLocalCacheData)
        }
        let request = try modifier(original)
        #expect(request.httpMethod == "PUT")
        #expect(request.timeoutInterval == 3)
        #expect(request.url?.query == "page=2&v=2")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t0k")
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(request.cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(request.rejectedInput == nil)
    }

    @Test("a chain without sendingJSON needs no try (the documented modifier compiles as written)")
    func chainingWithoutTry() throws {
        // A non-throwing closure type: this would not compile if any helper here threw.
        let modifier: @Sendable (URLRequest) -> URLRequest = {
            $0.addingBearerAuthorization(accessToken: "t0k")
                .receivingJSON()
                .addingQueryItem(name: "q", value: "a+b & c")
                .addingValue("1", forHTTPHeaderField: "X-Trace")
                .settingValue("text/plain", forHTTPHeaderField: "Content-Type")
                .sendingBody(Data("x".utf8), contentType: "text/plain")
                .withTimeout(3)
                .withMethod(.post)
        }
        let request = modifier(original)
        #expect(request.rejectedInput == nil)
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t0k")
        #expect(request.url?.query == "page=2&q=a%2Bb%20%26%20c")
    }

    // MARK: Refused input and HTTPClient

    @Test("the first refusal in a chain wins; later helpers neither replace nor clear it")
    func firstRefusalWins() throws {
        let chained = original
            .withTimeout(0)
            .addingBearerAuthorization(accessToken: "")
            .addingValue("v", forHTTPHeaderField: "Bad Name")
            .settingValue("a\r\nb", forHTTPHeaderField: "X-Trace")
            .withMethod("GE T")
            .settingValue("fine", forHTTPHeaderField: "X-Fine")
            .receivingJSON()
        #expect(chained.rejectedInput == .invalidTimeout(0))
        // Valid helpers after the refusal still apply to the copy, but it is never sent.
        #expect(chained.value(forHTTPHeaderField: "X-Fine") == "fine")

        // The same refusals in another order: again the first one is kept.
        let reordered = original
            .addingValue("v", forHTTPHeaderField: "Bad Name")
            .addingBearerAuthorization(accessToken: "")
            .withTimeout(0)
        #expect(reordered.rejectedInput == .invalidHeaderName("Bad Name"))
        #expect(original.addingBearerAuthorization(accessToken: "").withMethod("GE T").rejectedInput == .invalidBearerToken)

        let direct = sendThroughClient(chained)
        #expect(direct.requestError == .invalidTimeout(0))
        #expect(direct.sent.isEmpty)
        let viaAPI = sendThroughAPI {
            $0.withMethod("GE T").addingBearerAuthorization(accessToken: "").withTimeout(-1)
        }
        #expect(viaAPI.requestError == .invalidMethod("GE T"))
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("a refusal in the request wins over an invalid default header of the client")
    func refusalWinsOverBadDefaultHeader() throws {
        let refused = original.addingBearerAuthorization(accessToken: "a b")
        let outcome = sendThroughClient(refused, defaultHeaders: ["X-Bad": "a\r\nInjected: 1"])
        #expect(outcome.requestError == .invalidBearerToken)
        #expect(outcome.sent.isEmpty)
        // Without the refusal, the default header itself is what fails the request.
        let valid = sendThroughClient(original, defaultHeaders: ["X-Bad": "a\r\nInjected: 1"])
        #expect(valid.requestError == .invalidHeaderValue(name: "X-Bad"))
        #expect(valid.sent.isEmpty)
    }

    @Test("a valid chain remembers nothing, and no marker header reaches the transport")
    func validChainSendsNoMarker() throws {
        let request = original
            .addingBearerAuthorization(accessToken: "t0k")
            .receivingJSON()
            .addingValue("1", forHTTPHeaderField: "X-Trace")
            .sendingBody(Data("x".utf8), contentType: "text/plain")
            .addingQueryItem(name: "v", value: "2")
            .withTimeout(3)
            .withMethod(.put)
        #expect(request.rejectedInput == nil)
        let expectedFields: Set<String> = ["authorization", "accept", "x-trace", "content-type"]
        #expect(Set((request.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }) == expectedFields)

        let direct = sendThroughClient(request)
        #expect(direct.isFinished)
        let sent = try #require(direct.sent.first)
        #expect(direct.sent.count == 1)
        // Exactly the headers the chain set, plus the client's User-Agent: nothing else.
        #expect(Set((sent.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }) == expectedFields.union(["user-agent"]))
        #expect(sent.value(forHTTPHeaderField: "Transit-Rejected-Input") == nil)
        #expect(sent.httpMethod == "PUT")
        #expect(sent.timeoutInterval == 3)

        let viaAPI = sendThroughAPI {
            $0.addingBearerAuthorization(accessToken: "t0k").receivingJSON().addingQueryItem(name: "v", value: "2")
        }
        #expect(viaAPI.isFinished)
        let apiSent = try #require(viaAPI.sent.first)
        #expect(Set((apiSent.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }) == ["authorization", "accept", "user-agent"])
        #expect(apiSent.url?.absoluteString == "https://api.example.com/v1/items?v=2")
    }

    @Test("HTTPClient refuses a header name that is not a token even when set with plain setValue",
          arguments: ["Bad Name", "X-Trace:", "(X)"])  // Names Linux Foundation does not re-case.
    func validateCatchesPlainSetValueName(name: String) throws {
        var request = original
        request.setValue("v", forHTTPHeaderField: name)
        #expect(request.rejectedInput == nil, "plain setValue bypasses the helpers")

        let direct = sendThroughClient(request)
        #expect(direct.requestError == .invalidHeaderName(name))
        #expect(direct.terminalCount == 1)
        #expect(direct.sent.isEmpty)
        let viaAPI = sendThroughAPI { request in
            var copy = request
            copy.setValue("v", forHTTPHeaderField: name)
            return copy
        }
        #expect(viaAPI.requestError == .invalidHeaderName(name))
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("HTTPClient refuses a method that is not a token even when set directly")
    func validateCatchesPlainMethod() throws {
        var request = original
        request.httpMethod = "GE T"
        let outcome = sendThroughClient(request)
        #expect(outcome.requestError == .invalidMethod("GE T"))
        #expect(outcome.terminalCount == 1)
        #expect(outcome.sent.isEmpty)
    }
}
