import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
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
    let client = HTTPClient(transport: transport) {
        $0.defaultHeaders = defaultHeaders
        $0.userAgent = "FluentTests"
    }
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
        _ = try original.addingValue("a", forHTTPHeaderField: "X-A")
        _ = try original.settingValue("b", forHTTPHeaderField: "X-B")
        _ = try original.addingBearerAuthorization(accessToken: "t")
        _ = original.receivingJSON()
        _ = try original.sendingJSON(Payload(name: "n", count: 1))
        _ = try original.sendingBody(Data("x".utf8), contentType: "text/plain")
        _ = try original.addingQueryItem(name: "q", value: "1")
        _ = try original.withTimeout(5)
        _ = try original.withMethod(.post)
        _ = original.withCachePolicy(.reloadIgnoringLocalCacheData)
        // Refused input leaves the receiver as it was.
        _ = try? original.addingValue("a\r\n", forHTTPHeaderField: "X-A")
        _ = try? original.settingValue("b", forHTTPHeaderField: "X B")
        _ = try? original.addingBearerAuthorization(accessToken: "")
        _ = try? original.withTimeout(0)
        _ = try? original.withMethod("GE T")
        #expect(original == before)
        #expect(original.allHTTPHeaderFields?.isEmpty ?? true)
        #expect(original.url?.absoluteString == "https://api.example.com/v1/items?page=2")
        #expect(original.httpBody == nil)
        #expect(original.httpMethod == "GET")
    }

    @Test("addingValue appends like URLRequest.addValue; settingValue replaces, case-insensitively")
    func addAndSet() throws {
        let added = try original
            .addingValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            .addingValue("br", forHTTPHeaderField: "accept-encoding")
        var reference = original
        reference.addValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        reference.addValue("br", forHTTPHeaderField: "accept-encoding")
        let value = try #require(added.value(forHTTPHeaderField: "Accept-Encoding"))
        #expect(value == reference.value(forHTTPHeaderField: "Accept-Encoding"))
        #expect(value.contains("gzip") && value.contains("br"))

        let set = try added.settingValue("identity", forHTTPHeaderField: "ACCEPT-ENCODING")
        #expect(set.value(forHTTPHeaderField: "Accept-Encoding") == "identity")
        #expect(set.allHTTPHeaderFields?.count == 1)
    }

    @Test("tabs, spaces and non-ASCII text are valid header values")
    func permittedValues() throws {
        let request = try original
            .settingValue("a\tb c", forHTTPHeaderField: "X-Spaced")
            .settingValue("caf\u{e9}", forHTTPHeaderField: "X-Latin")
            .settingValue("", forHTTPHeaderField: "X-Empty")
        #expect(request.value(forHTTPHeaderField: "X-Spaced") == "a\tb c")
        #expect(request.value(forHTTPHeaderField: "X-Latin") == "caf\u{e9}")
        let outcome = sendThroughClient(request)
        #expect(outcome.isFinished)
        #expect(outcome.sent.first?.value(forHTTPHeaderField: "X-Spaced") == "a\tb c")
    }

    @Test("header values with CR, LF, NUL or other control characters are refused (header injection)",
          arguments: ["v\r\nX-Injected: 1", "v\nX-Injected: 1", "v\r", "a\u{0}b", "bell\u{7}", "del\u{7F}"])
    func headerInjectionRejected(value: String) throws {
        #expect(throws: URLRequestError.invalidHeaderValue(name: "X-Trace")) {
            try original.addingValue(value, forHTTPHeaderField: "X-Trace")
        }
        #expect(throws: URLRequestError.invalidHeaderValue(name: "X-Trace")) {
            try original.settingValue(value, forHTTPHeaderField: "X-Trace")
        }
        #expect(throws: URLRequestError.invalidHeaderValue(name: "Content-Type")) {
            try original.sendingBody(Data(), contentType: value)
        }

        // In a modifier, the refusal fails the request with exactly that error and nothing
        // reaches the transport.
        let cases: [(RequestModifier, URLRequestError)] = [
            ({ try $0.addingValue(value, forHTTPHeaderField: "X-Trace") }, .invalidHeaderValue(name: "X-Trace")),
            ({ try $0.settingValue(value, forHTTPHeaderField: "X-Trace") }, .invalidHeaderValue(name: "X-Trace")),
            ({ try $0.sendingBody(Data(), contentType: value) }, .invalidHeaderValue(name: "Content-Type")),
        ]
        for (modifier, expected) in cases {
            let outcome = sendThroughAPI(modifier)
            #expect(outcome.requestError == expected)
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
    }

    @Test("header names that are not tokens are refused",
          arguments: ["", "X Trace", "X-Trace:", "X-Trace\r\nX-Injected", "Caf\u{e9}", "(x)", "a/b"])
    func invalidHeaderNames(name: String) throws {
        #expect(throws: URLRequestError.invalidHeaderName(name)) {
            try original.addingValue("v", forHTTPHeaderField: name)
        }
        #expect(throws: URLRequestError.invalidHeaderName(name)) {
            try original.settingValue("v", forHTTPHeaderField: name)
        }
        let viaAPI = sendThroughAPI { try $0.addingValue("v", forHTTPHeaderField: name) }
        #expect(viaAPI.requestError == .invalidHeaderName(name))
        #expect(viaAPI.terminalCount == 1)
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
        let request = try original
            .settingValue("Basic abc", forHTTPHeaderField: "authorization")
            .addingBearerAuthorization(accessToken: "eyJhbGciOi.J9-_~+/=")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer eyJhbGciOi.J9-_~+/=")
        #expect(request.allHTTPHeaderFields?.count == 1)
    }

    @Test("an empty token or one with whitespace or control characters is refused",
          arguments: ["", "abc\n", "abc def", " abc", "abc\r\nX-Injected: 1", "a\tb", "abc\r\n", "\u{7F}"])
    func invalidBearer(token: String) throws {
        #expect(throws: URLRequestError.invalidBearerToken) {
            try original.addingBearerAuthorization(accessToken: token)
        }
        let viaAPI = sendThroughAPI { try $0.addingBearerAuthorization(accessToken: token).receivingJSON() }
        #expect(viaAPI.requestError == .invalidBearerToken)
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("a refused bearer token never appears in the error or in what is sent")
    func refusedBearerTokenDoesNotLeak() throws {
        let secret = "s3cr3t-T0ken-4f9a"
        let token = secret + "\n"
        let error = try #require(throws: URLRequestError.self) {
            try original.addingBearerAuthorization(accessToken: token)
        }
        for text in [error.description, error.localizedDescription, String(reflecting: error), "\(error)"] {
            #expect(!text.contains(secret))
        }

        // Through a RESTAPI whose token is refused on the first subscription and valid on the
        // second: only the second request is recorded, and no recorded request carries the secret.
        let transport = makeAnsweringTransport()
        let api = StubbedService(transport: transport)
        let current = SharedValue(token)
        let signal = api.get(endpoint: "me") { try $0.addingBearerAuthorization(accessToken: current.value) }
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
        let request = try original.settingValue("text/html", forHTTPHeaderField: "accept").receivingJSON()
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
        let request = try original.sendingBody(data, contentType: "application/octet-stream")
        #expect(request.httpBody == data)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
    }

    // MARK: Query items

    @Test("query items are appended after the existing query, fully percent-encoded")
    func queryItems() throws {
        let request = try original
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
        let url = try #require(try request.addingQueryItem(name: "c", value: "1").url)
        #expect(url.absoluteString == "https://h.example.com/p?a=%2B&b=x+y&c=1#frag")
    }

    @Test("a URL without a query, or with an empty one, gets just the new items")
    func queryOnBareURL() throws {
        let bare = URLRequest(url: URL(string: "https://h.example.com/p")!)
        #expect(try bare.addingQueryItem(name: "a", value: "1").url?.absoluteString == "https://h.example.com/p?a=1")
        let empty = URLRequest(url: URL(string: "https://h.example.com/p?")!)
        #expect(try empty.addingQueryItem(name: "a", value: "1").url?.absoluteString == "https://h.example.com/p?a=1")
        #expect(try bare.addingQueryItems([]).url == bare.url)
    }

    @Test("adding query items to a request without a URL is refused with invalidURL")
    func queryWithoutURL() throws {
        var request = original
        request.url = nil
        #expect(throws: URLRequestError.invalidURL) { try request.addingQueryItem(name: "a", value: "1") }
        #expect(throws: URLRequestError.invalidURL) { try request.addingQueryItems([]) }
        #expect(URLRequestError.invalidURL.description.contains("no valid URL"))

        let viaAPI = sendThroughAPI { request in
            var copy = request
            copy.url = nil
            return try copy.addingQueryItem(name: "a", value: "1")
        }
        #expect(viaAPI.requestError == .invalidURL)
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("on a request without a URL the throwing helpers refuse with invalidURL, the others return it unchanged, and the client refuses it")
    func helpersOnRequestWithoutURL() throws {
        var request = original
        request.url = nil
        let throwing: [(URLRequest) throws -> URLRequest] = [
            { try $0.addingValue("a", forHTTPHeaderField: "X-A") },
            { try $0.settingValue("b", forHTTPHeaderField: "X-B") },
            { try $0.addingBearerAuthorization(accessToken: "t") },
            { try $0.sendingJSON(Payload(name: "n", count: 1)) },
            { try $0.sendingBody(Data("x".utf8), contentType: "text/plain") },
            { try $0.addingQueryItem(name: "q", value: "1") },
            { try $0.withTimeout(5) },
            { try $0.withMethod(.post) },
        ]
        for helper in throwing {
            #expect(throws: URLRequestError.invalidURL) { try helper(request) }
        }
        for result in [request.receivingJSON(), request.withCachePolicy(.reloadIgnoringLocalCacheData), request] {
            #expect(result.url == nil)
            let outcome = sendThroughClient(result, defaultHeaders: ["X-Default": "1"])
            #expect(outcome.requestError == .invalidURL)
            #expect(outcome.terminalCount == 1)
            #expect(outcome.sent.isEmpty)
        }
        // Refused input is reported before the missing URL.
        #expect(throws: URLRequestError.invalidMethod("GE T")) { try request.withMethod("GE T") }
        #expect(throws: URLRequestError.invalidTimeout(0)) { try request.withTimeout(0) }
    }

    // MARK: Timeout, method, cache policy

    @Test("withTimeout sets the timeout interval")
    func timeout() throws {
        #expect(try original.withTimeout(12.5).timeoutInterval == 12.5)
    }

    @Test("a timeout that is not a finite number above zero is refused",
          arguments: [0, -1, Double.nan, Double.infinity, -Double.infinity])
    func invalidTimeout(seconds: Double) throws {
        let error = try #require(throws: URLRequestError.self) { try original.withTimeout(seconds) }
        #expect(isInvalidTimeout(error, seconds), "got \(error)")

        let viaAPI = sendThroughAPI { try $0.withTimeout(seconds) }
        #expect(isInvalidTimeout(viaAPI.requestError, seconds), "got \(String(describing: viaAPI.failure))")
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("withMethod sets the method; a method that is not a token is refused")
    func method() throws {
        #expect(try original.withMethod(.patch).httpMethod == "PATCH")
        #expect(try original.withMethod("purge").httpMethod == "PURGE")
        #expect(throws: URLRequestError.invalidMethod("GE T")) { try original.withMethod("GE T") }
        #expect(throws: URLRequestError.invalidMethod("")) { try original.withMethod("") }

        let viaAPI = sendThroughAPI { try $0.withMethod("GE T") }
        #expect(viaAPI.requestError == .invalidMethod("GE T"))
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("withCachePolicy sets the cache policy")
    func cachePolicy() throws {
        #expect(original.withCachePolicy(.reloadIgnoringLocalCacheData).cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(original.withCachePolicy(.returnCacheDataDontLoad).cachePolicy == .returnCacheDataDontLoad)
    }

    @Test("helpers chain under one try, as in a request modifier")
    func chaining() throws {
        let modifier: RequestModifier = {
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
    }

    @Test("helpers that cannot fail need no try")
    func nonThrowingHelpers() throws {
        // A non-throwing closure type: this would not compile if either helper threw.
        let modifier: @Sendable (URLRequest) -> URLRequest = {
            $0.receivingJSON().withCachePolicy(.reloadIgnoringLocalCacheData)
        }
        let request = modifier(original)
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.cachePolicy == .reloadIgnoringLocalCacheData)
    }

    // MARK: Refused input and HTTPClient

    @Test("the first refusal in a chain is thrown and the rest of the chain does not run")
    func firstRefusalWins() throws {
        let ran = SharedValue(false)
        let error = try #require(throws: URLRequestError.self) {
            try original
                .withTimeout(0)
                .addingBearerAuthorization(accessToken: "")
                .settingValue({ ran.value = true; return "fine" }(), forHTTPHeaderField: "X-Fine")
        }
        #expect(error == .invalidTimeout(0))
        #expect(!ran.value)

        #expect(throws: URLRequestError.invalidHeaderName("Bad Name")) {
            try original
                .addingValue("v", forHTTPHeaderField: "Bad Name")
                .addingBearerAuthorization(accessToken: "")
                .withTimeout(0)
        }
        let viaAPI = sendThroughAPI {
            try $0.withMethod("GE T").addingBearerAuthorization(accessToken: "").withTimeout(-1)
        }
        #expect(viaAPI.requestError == .invalidMethod("GE T"))
        #expect(viaAPI.terminalCount == 1)
        #expect(viaAPI.sent.isEmpty)
    }

    @Test("a refusal in the modifier wins over an invalid default header of the client")
    func refusalWinsOverBadDefaultHeader() throws {
        let refused = sendThroughAPI(defaultHeaders: ["X-Bad": "a\r\nInjected: 1"]) {
            try $0.addingBearerAuthorization(accessToken: "a b")
        }
        #expect(refused.requestError == .invalidBearerToken)
        #expect(refused.sent.isEmpty)
        // Without the refusal, the default header itself is what fails the request.
        let valid = sendThroughClient(original, defaultHeaders: ["X-Bad": "a\r\nInjected: 1"])
        #expect(valid.requestError == .invalidHeaderValue(name: "X-Bad"))
        #expect(valid.sent.isEmpty)
    }

    @Test("a valid chain sends exactly the headers it set, and nothing else")
    func validChainSendsNoMarker() throws {
        let request = try original
            .addingBearerAuthorization(accessToken: "t0k")
            .receivingJSON()
            .addingValue("1", forHTTPHeaderField: "X-Trace")
            .sendingBody(Data("x".utf8), contentType: "text/plain")
            .addingQueryItem(name: "v", value: "2")
            .withTimeout(3)
            .withMethod(.put)
        let expectedFields: Set<String> = ["authorization", "accept", "x-trace", "content-type"]
        #expect(Set((request.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }) == expectedFields)

        let direct = sendThroughClient(request)
        #expect(direct.isFinished)
        let sent = try #require(direct.sent.first)
        #expect(direct.sent.count == 1)
        // Exactly the headers the chain set, plus the client's User-Agent: nothing else.
        #expect(Set((sent.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }) == expectedFields.union(["user-agent"]))
        #expect(sent.httpMethod == "PUT")
        #expect(sent.timeoutInterval == 3)

        let viaAPI = sendThroughAPI {
            try $0.addingBearerAuthorization(accessToken: "t0k").receivingJSON().addingQueryItem(name: "v", value: "2")
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

@Suite("Fluent helpers write the same headers as Foundation")
struct FluentHeaderParityTests {
    @Test func bearerAndAcceptReplaceAFieldOfAnyCaseAsSetValueDoes() throws {
        var request = URLRequest(url: URL(string: "https://api.example.com/x")!)
        request.allHTTPHeaderFields = ["authorization": "Bearer old", "ACCEPT": "text/plain", "X-Kept": "1"]
        var foundation = request
        foundation.setValue("Bearer new", forHTTPHeaderField: "Authorization")
        foundation.setValue("application/json", forHTTPHeaderField: "Accept")

        let fluent = try request.addingBearerAuthorization(accessToken: "new").receivingJSON()
        let fields = fluent.allHTTPHeaderFields ?? [:]
        #expect(fields.count == 3)
        #expect(fields["Authorization"] == "Bearer new")
        #expect(fields["Accept"] == "application/json")
        #expect(fields["X-Kept"] == "1")
        #expect(fluent.value(forHTTPHeaderField: "authorization") == foundation.value(forHTTPHeaderField: "authorization"))
        #expect(fluent.value(forHTTPHeaderField: "accept") == foundation.value(forHTTPHeaderField: "accept"))
        #expect(Set(fields.keys.map { $0.lowercased() }) == Set((foundation.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() }))
        // The receiver is untouched.
        #expect(request.allHTTPHeaderFields?["authorization"] == "Bearer old")
    }
}
