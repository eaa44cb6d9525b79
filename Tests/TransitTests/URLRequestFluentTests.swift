import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit

private struct Payload: Codable, Equatable {
    var name: String
    var count: Int
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
    }

    @Test("tabs, spaces and non-ASCII text are valid header values")
    func permittedValues() throws {
        let request = try original
            .settingValue("a\tb c", forHTTPHeaderField: "X-Spaced")
            .settingValue("caf\u{e9}", forHTTPHeaderField: "X-Latin")
            .settingValue("", forHTTPHeaderField: "X-Empty")
        #expect(request.value(forHTTPHeaderField: "X-Spaced") == "a\tb c")
        #expect(request.value(forHTTPHeaderField: "X-Latin") == "caf\u{e9}")
    }

    @Test("header values with CR, LF, NUL or other control characters are rejected (header injection)",
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
    }

    @Test("header names that are not tokens are rejected",
          arguments: ["", "X Trace", "X-Trace:", "X-Trace\r\nX-Injected", "Caf\u{e9}", "(x)", "a/b"])
    func invalidHeaderNames(name: String) throws {
        #expect(throws: URLRequestError.invalidHeaderName(name)) {
            try original.addingValue("v", forHTTPHeaderField: name)
        }
        #expect(throws: URLRequestError.invalidHeaderName(name)) {
            try original.settingValue("v", forHTTPHeaderField: name)
        }
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

    @Test("an empty token or one with whitespace or control characters is rejected",
          arguments: ["", "abc\n", "abc def", " abc", "abc\r\nX-Injected: 1", "a\tb"])
    func invalidBearer(token: String) throws {
        #expect(throws: URLRequestError.invalidBearerToken) {
            try original.addingBearerAuthorization(accessToken: token)
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

    @Test("adding query items to a request without a URL throws URLError(.badURL)")
    func queryWithoutURL() throws {
        var request = original
        request.url = nil
        let error = try #require(throws: URLError.self) { try request.addingQueryItem(name: "a", value: "1") }
        #expect(error.code == .badURL)
    }

    // MARK: Timeout, method, cache policy

    @Test("withTimeout sets the timeout interval")
    func timeout() throws {
        #expect(try original.withTimeout(12.5).timeoutInterval == 12.5)
    }

    @Test("a timeout that is not a finite number above zero is rejected",
          arguments: [0, -1, Double.nan, Double.infinity, -Double.infinity])
    func invalidTimeout(seconds: Double) throws {
        let error = try #require(throws: URLRequestError.self) { try original.withTimeout(seconds) }
        guard case .invalidTimeout = error else {
            Issue.record("unexpected \(error)")
            return
        }
    }

    @Test("withMethod sets the method; a method that is not a token is rejected")
    func method() throws {
        #expect(try original.withMethod(.patch).httpMethod == "PATCH")
        #expect(try original.withMethod("purge").httpMethod == "PURGE")
        #expect(throws: URLRequestError.invalidMethod("GE T")) { try original.withMethod("GE T") }
        #expect(throws: URLRequestError.invalidMethod("")) { try original.withMethod("") }
    }

    @Test("withCachePolicy sets the cache policy")
    func cachePolicy() throws {
        #expect(original.withCachePolicy(.reloadIgnoringLocalCacheData).cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(original.withCachePolicy(.returnCacheDataDontLoad).cachePolicy == .returnCacheDataDontLoad)
    }

    @Test("helpers chain under one try, as in a request modifier")
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
    }
}
