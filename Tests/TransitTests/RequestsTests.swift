import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

private struct NewPost: Codable, Equatable, Sendable {
    var title: String
    var userId: Int
}

/// Counts how many times it is encoded, to show that encoding happens inside the subscription.
private struct CountingBody: Encodable, Sendable {
    let encodings: SharedValue<Int>
    func encode(to encoder: any Encoder) throws {
        encodings.update { $0 += 1 }
        var container = encoder.singleValueContainer()
        try container.encode("counted")
    }
}

private struct ModifierError: Error, Equatable {}

@Suite("RESTAPI requests over StubTransport")
struct RequestsTests {
    let transport = StubTransport()

    init() {
        transport.stub().thenRespond(.text("ok"))
    }

    // MARK: Verbs

    @Test("every verb reaches the transport with its method, body, headers and URL",
          arguments: [HTTPMethod.get, .head, .post, .put, .patch, .delete])
    func verbsReachTransport(method: HTTPMethod) throws {
        let api = StubbedService(transport: transport, defaultHeaders: ["X-Client": "default"])
        let body = Data("payload-\(method)".utf8)
        let modifier: RequestModifier = { try $0.settingValue("yes", forHTTPHeaderField: "X-Modified") }
        let signal: Signal<HTTPResponse, any Error>
        switch method {
        case .get: signal = api.get(endpoint: "things/1", modifier: modifier)
        case .head: signal = api.head(endpoint: "things/1", modifier: modifier)
        case .post: signal = api.post(endpoint: "things/1", body: body, modifier: modifier)
        case .put: signal = api.put(endpoint: "things/1", body: body, modifier: modifier)
        case .patch: signal = api.patch(endpoint: "things/1", body: body, modifier: modifier)
        default: signal = api.delete(endpoint: "things/1", body: body, modifier: modifier)
        }
        #expect(transport.requests.isEmpty, "building a signal must not send anything")

        let probe = RequestProbe(signal)
        #expect(probe.isFinished)
        #expect(probe.values.map(\.statusCode) == [200])
        let sent = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(sent.httpMethod == method.rawValue)
        #expect(sent.url?.absoluteString == "https://api.example.com/v1/things/1")
        #expect(sent.value(forHTTPHeaderField: "X-Modified") == "yes")
        #expect(sent.value(forHTTPHeaderField: "X-Client") == "default")
        #expect(sent.value(forHTTPHeaderField: "User-Agent") == "TransitTests/1.0")
        if method == .get || method == .head {
            #expect(sent.httpBody == nil)
        } else {
            #expect(sent.httpBody == body)
        }
        // The response carries the request as it was sent.
        #expect(probe.values.first?.request.value(forHTTPHeaderField: "X-Modified") == "yes")
    }

    @Test("request(method:) sends any method, upper-cased")
    func generalRequest() throws {
        let api = StubbedService(transport: transport)
        _ = RequestProbe(api.request(method: "options", endpoint: "things"))
        #expect(transport.requests.first?.httpMethod == "OPTIONS")
    }

    @Test("headers the request sets win over the client's default headers and User-Agent")
    func requestHeadersWinOverDefaults() throws {
        let api = StubbedService(
            transport: transport,
            defaultHeaders: ["X-Client": "default", "Accept": "text/plain"],
            userAgent: "Default-Agent"
        )
        _ = RequestProbe(api.get(endpoint: "things") {
            try $0.settingValue("mine", forHTTPHeaderField: "x-client")
                .settingValue("Custom-Agent/2", forHTTPHeaderField: "user-agent")
                .receivingJSON()
        })
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "X-Client") == "mine")
        #expect(sent.value(forHTTPHeaderField: "User-Agent") == "Custom-Agent/2")
        #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json")
        // Exactly one value each: the default was not appended to the request's own.
        let fields = sent.allHTTPHeaderFields ?? [:]
        #expect(fields.keys.filter { $0.lowercased() == "x-client" }.count == 1)
        #expect(fields.keys.filter { $0.lowercased() == "user-agent" }.count == 1)
    }

    @Test("a client with no User-Agent sends none of its own; defaultHeaders may name one")
    func userAgentOptions() throws {
        let none = StubbedService(transport: transport, userAgent: nil)
        _ = RequestProbe(none.get(endpoint: "a"))
        #expect(transport.requests.last?.value(forHTTPHeaderField: "User-Agent") == nil)

        let fromDefaults = StubbedService(transport: transport, defaultHeaders: ["user-agent": "FromDefaults"], userAgent: "Ignored")
        _ = RequestProbe(fromDefaults.get(endpoint: "a"))
        #expect(transport.requests.last?.value(forHTTPHeaderField: "User-Agent") == "FromDefaults")
    }

    @Test("a client default header with a line break fails the request and sends nothing")
    func badDefaultHeader() throws {
        let api = StubbedService(transport: transport, defaultHeaders: ["X-Bad": "a\r\nInjected: 1"])
        let probe = RequestProbe(api.get(endpoint: "a"))
        #expect(probe.failure as? URLRequestError == .invalidHeaderValue(name: "X-Bad"))
        #expect(transport.requests.isEmpty)
    }

    // MARK: JSON bodies

    @Test("post/put/patch with a .json body encode it as JSON with Content-Type application/json",
          arguments: [HTTPMethod.post, .put, .patch])
    func jsonVerbs(method: HTTPMethod) throws {
        let api = StubbedService(transport: transport)
        let post = NewPost(title: "a+b & c", userId: 7)
        let signal: Signal<HTTPResponse, any Error>
        switch method {
        case .post: signal = api.post(endpoint: "posts", body: .json(post))
        case .put: signal = api.put(endpoint: "posts", body: .json(post))
        default: signal = api.patch(endpoint: "posts", body: .json(post))
        }
        let probe = RequestProbe(signal)
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == method.rawValue)
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(NewPost.self, from: try #require(sent.httpBody)) == post)
    }

    @Test("the JSON verbs use the given encoder, and the modifier runs after encoding")
    func jsonEncoderAndModifierOrder() throws {
        let api = StubbedService(transport: transport)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        _ = RequestProbe(api.post(endpoint: "posts", body: .json(NewPost(title: "t", userId: 1), encoder: encoder)) {
            try $0.settingValue("application/vnd.api+json", forHTTPHeaderField: "Content-Type")
        })
        let sent = try #require(transport.requests.first)
        let body = try #require(sent.httpBody.flatMap { String(data: $0, encoding: .utf8) })
        #expect(body.contains("\"user_id\":1"))
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/vnd.api+json")
    }

    @Test("JSON encoding runs inside the subscription, once per attempt")
    func jsonEncodingIsCold() throws {
        let api = StubbedService(transport: transport)
        let encodings = SharedValue(0)
        let signal = api.post(endpoint: "posts", body: .json(CountingBody(encodings: encodings)))
        #expect(encodings.value == 0)
        _ = RequestProbe(signal)
        _ = RequestProbe(signal)
        #expect(encodings.value == 2)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.first?.httpBody == Data("\"counted\"".utf8))
    }

    @Test("a value that cannot be encoded fails the signal with the encoding error and sends nothing")
    func jsonEncodingFailure() throws {
        let api = StubbedService(transport: transport)
        let modifierRuns = SharedValue(0)
        let probe = RequestProbe(api.put(endpoint: "values", body: .json(["x": Double.nan])) { request in
            modifierRuns.update { $0 += 1 }
            return request
        })
        #expect(probe.failure is EncodingError)
        #expect(probe.terminalCount == 1)
        #expect(modifierRuns.value == 0)
        #expect(transport.requests.isEmpty)
    }

    // MARK: Cold signals and modifiers

    @Test("the modifier runs again on every subscription and reads fresh state")
    func modifierRerunsPerSubscription() throws {
        let api = StubbedService(transport: transport)
        let token = SharedValue("token-1")
        let signal = api.get(endpoint: "me") { try $0.addingBearerAuthorization(accessToken: token.value) }
        _ = RequestProbe(signal)
        token.value = "token-2"
        _ = RequestProbe(signal)
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer token-1", "Bearer token-2"])
    }

    @Test("the documented modifier compiles without try and sends its headers")
    func documentedModifierWithoutTry() throws {
        let api = StubbedService(transport: transport)
        let tokens = SharedValue("t0k-1")
        let probe = RequestProbe(api.get(endpoint: "posts") { try $0.addingBearerAuthorization(accessToken: tokens.value).receivingJSON() })
        #expect(probe.isFinished)
        let sent = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer t0k-1")
        #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(sent.url?.absoluteString == "https://api.example.com/v1/posts")
    }

    @Test("a modifier may be a function taking a plain URLRequest, or consume the request; both keep the body")
    func modifierOwnershipForms() throws {
        @Sendable func tagged(_ request: URLRequest) throws -> URLRequest {
            try request.settingValue("plain", forHTTPHeaderField: "X-Form")
        }
        let api = StubbedService(transport: transport)
        let body = Data("payload".utf8)
        _ = RequestProbe(api.post(endpoint: "a", body: body, modifier: tagged))
        _ = RequestProbe(api.post(endpoint: "b", body: body) { request in
            try (consume request).settingValue("consumed", forHTTPHeaderField: "X-Form")
        })
        _ = RequestProbe(api.get(endpoint: "c", modifier: tagged))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Form") } == ["plain", "consumed", "plain"])
        #expect(transport.requests.map { $0.httpBody } == [body, body, nil])
        #expect(transport.requests.map(\.httpMethod) == ["POST", "POST", "GET"])
    }

    @Test("retry(1) re-runs the modifier: the second attempt carries a new header value")
    func modifierRerunsOnRetry() throws {
        let transport = StubTransport()
        transport.stub(.get, path: "/v1/flaky").thenRespond(.status(500)).thenRespond(.text("fine"))
        let api = StubbedService(transport: transport)
        let attempt = SharedValue(0)
        let probe = RequestProbe(
            api.get(endpoint: "flaky") { request in
                let number = attempt.update { value -> Int in
                    value += 1
                    return value
                }
                return try request.settingValue("\(number)", forHTTPHeaderField: "X-Attempt")
            }
            .catchHTTPErrors()
            .retry(1)
        )
        #expect(probe.isFinished)
        #expect(probe.values.map(\.text) == ["fine"])
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Attempt") } == ["1", "2"])
    }

    @Test("a computed baseURL is read again on every subscription")
    func baseURLReadPerSubscription() throws {
        struct MovingService: RESTAPI {
            let host: SharedValue<String>
            let client: HTTPClient
            var baseURL: String { "https://\(host.value)/v1" }
        }
        let host = SharedValue("one.example.com")
        let api = MovingService(host: host, client: HTTPClient(transport: transport))
        let signal = api.get(endpoint: "x")
        _ = RequestProbe(signal)
        host.value = "two.example.com"
        _ = RequestProbe(signal)
        #expect(transport.requests.map { $0.url?.host } == ["one.example.com", "two.example.com"])
    }

    @Test("a throwing modifier fails the signal with its error and sends nothing")
    func throwingModifier() throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.get(endpoint: "x") { _ in throw ModifierError() })
        #expect(probe.failure is ModifierError)
        #expect(probe.terminalCount == 1)
        #expect(transport.requests.isEmpty)
    }

    @Test("header injection in a modifier fails the request before it is sent")
    func headerInjectionInModifier() throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.get(endpoint: "x") {
            try $0.addingValue("v\r\nX-Injected: 1", forHTTPHeaderField: "X-Trace")
        })
        #expect(probe.failure as? URLRequestError == .invalidHeaderValue(name: "X-Trace"))
        #expect(transport.requests.isEmpty)
    }

    @Test("a header name that is not a token, set with plain setValue in a modifier, fails the request before it is sent")
    func plainSetValueBadNameInModifier() throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.get(endpoint: "x") { request in
            var copy = request
            copy.setValue("v", forHTTPHeaderField: "Bad Name")
            return copy
        })
        #expect(probe.failure as? URLRequestError == .invalidHeaderName("Bad Name"))
        #expect(probe.terminalCount == 1)
        #expect(transport.requests.isEmpty)
    }

    @Test("a method that is not a token fails with invalidMethod and sends nothing",
          arguments: ["GE T", "", "POST\r\n", "GET/1"])
    func invalidMethod(method: String) throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.request(method: HTTPMethod(rawValue: method), endpoint: "x"))
        #expect(probe.failure as? URLRequestError == .invalidMethod(method.uppercased()))
        #expect(transport.requests.isEmpty)
    }

    // MARK: URLs

    @Test("invalid base URLs fail with URLError(.badURL), run no modifier and send nothing", arguments: [
        "", "api.example.com", "/v1", "ftp://api.example.com", "file:///etc/passwd", "https://",
        "https:///v1", "https://api.example.com/v1?key=1", "https://api.example.com/v1#top",
        "https://api example.com", "https://api.example.com/v 1", "https://api.example.com/%zz",
        "https://api.example.com/\n", " https://api.example.com", "https://api.example.com/|",
        "mailto:someone@example.com", "https://api.example.com/caf\u{e9}",
    ])
    func invalidBaseURL(base: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let modifierRuns = SharedValue(0)
        let probe = RequestProbe(api.get(endpoint: "posts") { request in
            modifierRuns.update { $0 += 1 }
            return request
        })
        #expect(URLError.matches(probe.failure, .badURL), "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(probe.terminalCount == 1)
        #expect(modifierRuns.value == 0)
        #expect(transport.requests.isEmpty)
    }

    @Test("malformed endpoints fail with URLError(.badURL) and send nothing", arguments: [
        "posts/a b", "posts/%zz", "posts/%2", "posts/%", "posts/\u{0}", "posts/a\r\nHost: evil",
        "posts\t", "http://evil.example.com/posts", "posts/https://evil.example.com",
        "posts?next=http://evil.example.com", "posts/{id}", "posts/\"x\"", "posts/a|b", "posts/[1]",
        "posts#a#b", "posts/caf\u{e9}", "posts?q=a b", "posts\\1",
    ])
    func invalidEndpoint(endpoint: String) throws {
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.post(endpoint: endpoint, body: Data("x".utf8)))
        #expect(URLError.matches(probe.failure, .badURL), "\(endpoint.debugDescription) gave \(String(describing: probe.failure))")
        #expect(probe.terminalCount == 1)
        #expect(transport.requests.isEmpty)
    }

    @Test("the URL error says what is wrong")
    func badURLDescription() throws {
        let probe = RequestProbe(StubbedService(transport: transport).get(endpoint: "posts/a b"))
        let error = try #require(probe.failure as? URLError)
        #expect(error.localizedDescription.contains("posts/a b"))
        #expect(error.localizedDescription.contains("space"))
    }

    @Test("base URL and endpoint join with exactly one '/' and keep the endpoint's query", arguments: [
        ("https://api.example.com/v1", "posts", "https://api.example.com/v1/posts"),
        ("https://api.example.com/v1/", "posts", "https://api.example.com/v1/posts"),
        ("https://api.example.com/v1/", "/posts", "https://api.example.com/v1/posts"),
        ("https://api.example.com/v1//", "//posts/", "https://api.example.com/v1/posts/"),
        ("https://api.example.com", "posts", "https://api.example.com/posts"),
        ("https://api.example.com/", "/posts", "https://api.example.com/posts"),
        ("HTTP://API.example.com:8080/v1", "posts", "http://api.example.com:8080/v1/posts"),
        ("https://api.example.com/v1", "posts?userId=1", "https://api.example.com/v1/posts?userId=1"),
        ("https://api.example.com/v1", "/posts/?userId=1&sort=desc", "https://api.example.com/v1/posts/?userId=1&sort=desc"),
        ("https://api.example.com/v1", "search?q=a%2Bb%20c", "https://api.example.com/v1/search?q=a%2Bb%20c"),
        ("https://api.example.com/v1", "?page=2", "https://api.example.com/v1?page=2"),
        ("https://api.example.com/v1/", "", "https://api.example.com/v1/"),
        ("https://api.example.com/v1", "posts#comments", "https://api.example.com/v1/posts#comments"),
        ("https://api.example.com/v1", "users/j%C3%B6rg", "https://api.example.com/v1/users/j%C3%B6rg"),
        ("https://api.example.com/a%20b", "c", "https://api.example.com/a%20b/c"),
        ("http://127.0.0.1:8080", "health", "http://127.0.0.1:8080/health"),
        ("http://[::1]:8080/api", "health", "http://[::1]:8080/api/health"),
    ])
    func urlJoining(base: String, endpoint: String, expected: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: endpoint))
        #expect(probe.isFinished, "\(base) + \(endpoint) failed: \(String(describing: probe.failure))")
        #expect(transport.requests.first?.url?.absoluteString.lowercased() == expected.lowercased())
    }

    @Test("an endpoint's query reaches the server as a query, not as part of the path")
    func endpointQueryReachesServer() throws {
        let transport = StubTransport()
        transport.stub(.get, path: "/v1/posts").thenRespond { request in
            .json(#"{"query":"\#(request.url?.query ?? "")"}"#)
        }
        let api = StubbedService(transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts?userId=1") {
            try $0.addingQueryItem(name: "tag", value: "a+b&c")
        })
        #expect(probe.isFinished)
        let url = try #require(transport.requests.first?.url)
        #expect(url.path == "/v1/posts")
        #expect(url.query == "userId=1&tag=a%2Bb%26c")
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items == [URLQueryItem(name: "userId", value: "1"), URLQueryItem(name: "tag", value: "a+b&c")])
        #expect(probe.values.first?.text == #"{"query":"userId=1&tag=a%2Bb%26c"}"#)
    }
}
