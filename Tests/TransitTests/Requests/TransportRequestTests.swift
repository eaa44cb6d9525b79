import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("The request value")
struct TransportRequestTests {
    private let url = URL(string: "https://api.example.com/v1/posts?page=2")!

    @Test func aURLRequestComesBackWithEverySettingItHad() {
        var original = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 12)
        original.httpMethod = "PUT"
        original.httpShouldHandleCookies = false
        original.setValue("application/json", forHTTPHeaderField: "Content-Type")
        original.httpBody = Data("{}".utf8)

        let request = TransportRequest(original)
        #expect(request.method == .put)
        #expect(request.url == url)
        #expect(request.headerFields == [HTTPField(name: "Content-Type", value: "application/json")])
        #expect(request.body == Data("{}".utf8))
        #expect(request.timeoutInterval == 12)

        let back = request.urlRequest
        #expect(back.httpMethod == "PUT")
        #expect(back.url == url)
        #expect(back.cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(back.timeoutInterval == 12)
        #expect(back.httpShouldHandleCookies == false)
        #expect(back.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(back.httpBody == Data("{}".utf8))
    }

    @Test func changingTheFourFieldsKeepsTheOtherSettings() {
        let original = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 7)
        var request = TransportRequest(original)
        request.method = .delete
        request.url = URL(string: "https://api.example.com/v1/posts/1")!
        request.headerFields.append(HTTPField(name: "X-Trace", value: "abc"))
        request.body = Data("x".utf8)

        let changed = request.urlRequest
        #expect(changed.httpMethod == "DELETE")
        #expect(changed.url?.absoluteString == "https://api.example.com/v1/posts/1")
        #expect(changed.value(forHTTPHeaderField: "X-Trace") == "abc")
        #expect(changed.httpBody == Data("x".utf8))
        #expect(changed.timeoutInterval == 7)
        #expect(changed.cachePolicy == .reloadIgnoringLocalCacheData)
    }

    @Test func aRequestTransitBuiltHasFoundationsDefaults() {
        let request = TransportRequest(
            method: .post, url: url,
            headerFields: [HTTPField(name: "Accept", value: "application/json")],
            body: Data("{}".utf8)
        )
        #expect(request.timeoutInterval == 60)
        #expect(request.bodyStream == nil)
        let urlRequest = request.urlRequest
        #expect(urlRequest.httpMethod == "POST")
        #expect(urlRequest.url == url)
        #expect(urlRequest.allHTTPHeaderFields == ["Accept": "application/json"])
        #expect(urlRequest.httpBody == Data("{}".utf8))
        #expect(urlRequest.timeoutInterval == URLRequest(url: url).timeoutInterval)
    }

    @Test func fieldsRepeatedUnderOneNameAreJoinedInAURLRequestAndKeptInOrderHere() {
        let request = TransportRequest(
            url: url,
            headerFields: [
                HTTPField(name: "Accept", value: "text/html"),
                HTTPField(name: "X-One", value: "1"),
                HTTPField(name: "accept", value: "application/json"),
            ]
        )
        #expect(request.headerFields.map(\.value) == ["text/html", "1", "application/json"])
        #expect(request.value(forHTTPHeaderField: "ACCEPT") == "text/html, application/json")
        #expect(request.urlRequest.value(forHTTPHeaderField: "Accept") == "text/html, application/json")
        #expect(request.urlRequest.value(forHTTPHeaderField: "X-One") == "1")
    }

    @Test func settingAFieldReplacesEverySpellingOfItsNameInThePlaceOfTheFirst() {
        var request = TransportRequest(
            url: url,
            headerFields: [
                HTTPField(name: "X-A", value: "a"),
                HTTPField(name: "authorization", value: "Bearer old"),
                HTTPField(name: "X-B", value: "b"),
                HTTPField(name: "AUTHORIZATION", value: "Bearer older"),
            ]
        )
        request.setValue("Bearer new", forHTTPHeaderField: "Authorization")
        #expect(request.headerFields == [
            HTTPField(name: "X-A", value: "a"),
            HTTPField(name: "Authorization", value: "Bearer new"),
            HTTPField(name: "X-B", value: "b"),
        ])
        request.setValue(nil, forHTTPHeaderField: "x-a")
        #expect(request.headerFields.map(\.name) == ["Authorization", "X-B"])
        request.setValue("c", forHTTPHeaderField: "X-C")
        #expect(request.headerFields.map(\.name) == ["Authorization", "X-B", "X-C"])
    }

    @Test func settingTheURLRequestReplacesTheFourFieldsAndKeepsTheFiles() {
        let file = URL(fileURLWithPath: "/tmp/body")
        var request = TransportRequest(method: .post, url: url, headerFields: [HTTPField(name: "X-Old", value: "1")], bodyFile: file)
        var replacement = URLRequest(url: URL(string: "https://api.example.com/other")!, timeoutInterval: 3)
        replacement.httpMethod = "PATCH"
        replacement.setValue("2", forHTTPHeaderField: "X-New")
        request.urlRequest = replacement
        #expect(request.method == .patch)
        #expect(request.url?.absoluteString == "https://api.example.com/other")
        #expect(request.headerFields == [HTTPField(name: "X-New", value: "2")])
        #expect(request.bodyFile == file)
        #expect(request.timeoutInterval == 3)
    }

    @Test func aBodyStreamIsSeenSoItIsRefusedNotSentEmpty() async throws {
        var streamed = URLRequest(url: url)
        streamed.httpMethod = "POST"
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))
        #expect(TransportRequest(streamed).bodyStream != nil)

        let transport = StubTransport()
        let client = HTTPClient(transport: transport)
        await #expect(throws: URLRequestError.bodyStreamNotSupported) {
            _ = try await client.send(streamed).firstValue()
        }
        #expect(transport.requests.isEmpty)
    }

    /// A request built by a service with neither a body nor a modifier reaches the transport as
    /// fields: the authorizer's header and the client's default headers, each once, and the
    /// response's `request` gives them back as a `URLRequest`.
    @Test func aVerbWithoutModifierSendsTheClientsFieldsAndTheResponseGivesThemBack() async throws {
        let transport = StubTransport()
        transport.stub(.get, path: "/v1/posts").thenRespond(.text("ok"))
        let tokens = TokenStore(
            token: AuthToken(accessToken: "t0k3n"),
            scope: CredentialScope(hosts: ["api.example.com"])
        ) { current in Signal(value: current) }
        let client = HTTPClient(transport: transport) {
            $0.defaultHeaders = ["Accept": "application/json"]
            $0.userAgent = "Tests"
            $0.authorizer = tokens
        }
        struct Service: RESTAPI {
            let baseURL = "https://api.example.com/v1"
            let client: HTTPClient
        }
        let response = try await Service(client: client).get(endpoint: "posts").firstValue()

        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == "GET")
        #expect(sent.url?.absoluteString == "https://api.example.com/v1/posts")
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer t0k3n")
        #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(sent.value(forHTTPHeaderField: "User-Agent") == "Tests")
        #expect(response.request.value(forHTTPHeaderField: "Authorization") == "Bearer t0k3n")
        #expect(response.request.url == sent.url)
    }
}

@Suite("The request value's descriptions")
struct TransportRequestDescriptionTests {
    @Test func noDescriptionShowsAHeaderValueOrTheURLsSecrets() {
        let request = TransportRequest(
            method: .post,
            url: URL(string: "https://api.example.com/login?password=hunter2&page=1")!,
            headerFields: [
                HTTPField(name: "Authorization", value: "Bearer s3cr3t"),
                HTTPField(name: "X-Api-Key", value: "k3y"),
            ],
            body: Data("password=hunter2".utf8)
        )
        var dumped = ""
        dump(request, to: &dumped)
        let response = HTTPResponse(data: Data(), head: HTTPResponseHead(url: request.url!, statusCode: 200, fields: []), sent: request)
        for text in [String(describing: request), String(reflecting: request), dumped,
                     String(describing: response), String(reflecting: response)] {
            #expect(!text.contains("s3cr3t") && !text.contains("k3y") && !text.contains("hunter2"), "\(text)")
        }
        #expect(String(describing: request).hasPrefix("POST https://api.example.com/login"))
        #expect(dumped.contains("POST https://api.example.com/login"))
    }
}
