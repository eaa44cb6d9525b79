import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

@Suite("Basic credentials: the fluent helper")
struct BasicAuthorizationHeaderTests {
    private let request = URLRequest(url: URL(string: "https://api.example.com/me")!)

    @Test("the header is Basic and the Base64 of the UTF-8 bytes of user:password", arguments: [
        ("alice", "pässwörd", "Basic YWxpY2U6cMOkc3N3w7ZyZA=="),
        ("Aladdin", "open sesame", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),   // RFC 7617 §2
        ("test", "123£", "Basic dGVzdDoxMjPCow=="),                         // RFC 7617 §2.1
        ("jöhn", "", "Basic asO2aG46"),                                      // an empty password
    ])
    func headerValue(username: String, password: String, expected: String) throws {
        let authorized = try request.addingBasicAuthorization(username: username, password: password)
        #expect(authorized.value(forHTTPHeaderField: "Authorization") == expected)
        let decoded = try #require(Data(base64Encoded: String(expected.dropFirst(6))))
        #expect(Array(decoded) == Array("\(username):\(password)".utf8))
    }

    @Test func aPasswordMayContainColonsAndTheHeaderReplacesAnyAuthorization() throws {
        var bearer = request
        bearer.setValue("Bearer old", forHTTPHeaderField: "authorization")
        let authorized = try bearer.addingBasicAuthorization(username: "u", password: "a:b:c")
        #expect(authorized.allHTTPHeaderFields?.count == 1)
        #expect(authorized.value(forHTTPHeaderField: "Authorization") == "Basic " + Data("u:a:b:c".utf8).base64EncodedString())
        #expect(request.value(forHTTPHeaderField: "Authorization") == nil, "the receiver is unchanged")
    }

    @Test("refused: a colon in the user name, a control character in either", arguments: [
        ("al:ice", "pw", URLRequestError.colonInBasicUsername),
        ("alice\n", "pw", .controlCharacterInBasicUsername),
        ("al\u{0}ice", "pw", .controlCharacterInBasicUsername),
        ("alice\u{85}", "pw", .controlCharacterInBasicUsername),
        ("alice", "secret-pw\n", .controlCharacterInBasicPassword),
        ("alice", "secret-pw\r\nX-Injected: 1", .controlCharacterInBasicPassword),
        ("alice", "secret\u{7F}pw", .controlCharacterInBasicPassword),
        ("alice", "secret\u{9F}pw", .controlCharacterInBasicPassword),
        ("alice", "secret\tpw", .controlCharacterInBasicPassword),
    ])
    func refusals(username: String, password: String, expected: URLRequestError) {
        #expect(throws: expected) { try request.addingBasicAuthorization(username: username, password: password) }
        #expect(throws: expected) {
            try BasicCredentials(username: username, password: password, scope: CredentialScope(hosts: ["api.example.com"]))
        }
        let message = String(describing: expected) + (expected.errorDescription ?? "")
        #expect(!message.contains("secret") && !message.contains("alice"))
        #expect(message.contains("Basic"))
    }

    @Test func theHeaderIsRedactedInTheCURLRenderingAndDescriptions() throws {
        let authorized = try request.addingBasicAuthorization(username: "alice", password: "pässwörd")
        let value = "YWxpY2U6cMOkc3N3w7ZyZA=="
        for text in [authorized.curlDescription(), String(describing: authorized), String(reflecting: authorized)] {
            #expect(!text.contains(value) && !text.contains("pässwörd"), "\(text)")
        }
        #expect(authorized.curlDescription().contains("Authorization"))
    }
}

@Suite("Basic credentials: the authoriser")
struct BasicCredentialsTests {
    let scheduler = TestScheduler()
    private static let header = "Basic YWxpY2U6cMOkc3N3w7ZyZA=="

    private func credentials(
        _ hosts: Set<String> = ["api.example.com"],
        insecureHTTP: CredentialScope.InsecureHTTP = .refused
    ) throws -> BasicCredentials {
        try BasicCredentials(username: "alice", password: "pässwörd", scope: CredentialScope(hosts: hosts, insecureHTTP: insecureHTTP))
    }

    private func get(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    private func sentAuthorization(_ url: String, _ credentials: BasicCredentials) -> (String?, Int) {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(matching: { _ in true }).thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = credentials
        }
        let probe = RequestProbe(client.send(get(url)))
        scheduler.run()
        #expect(probe.values.count == 1, "\(url)")
        return (transport.requests.last?.value(forHTTPHeaderField: "Authorization"), transport.requests.count)
    }

    @Test func theClientSendsTheHeaderToTheScopeAndToNoOtherHost() throws {
        let credentials = try credentials(["api.example.com", "*.files.example.com"])
        #expect(sentAuthorization("https://api.example.com/me", credentials).0 == Self.header)
        #expect(sentAuthorization("https://API.example.com:8443/me", credentials).0 == Self.header)
        #expect(sentAuthorization("https://eu.files.example.com/a", credentials).0 == Self.header)
        #expect(sentAuthorization("https://other.example.com/me", credentials).0 == nil)
        #expect(sentAuthorization("https://api.example.com.evil.net/me", credentials).0 == nil)
    }

    @Test func plainHTTPGetsNothingUnlessTheScopeAllowsIt() throws {
        #expect(sentAuthorization("http://api.example.com/me", try credentials()).0 == nil)
        let loopback = try credentials(["127.0.0.1", "api.example.com"], insecureHTTP: .loopbackOnly)
        #expect(sentAuthorization("http://127.0.0.1:8080/me", loopback).0 == Self.header)
        #expect(sentAuthorization("http://api.example.com/me", loopback).0 == nil)
        #expect(sentAuthorization("https://api.example.com/me", loopback).0 == Self.header)
        #expect(sentAuthorization("http://api.example.com/me", try credentials(insecureHTTP: .allowed)).0 == Self.header)
    }

    @Test func asAModifierItAddsNothingOutsideTheScope() throws {
        let credentials = try credentials()
        #expect(try credentials.authorize(get("https://api.example.com/me")).value(forHTTPHeaderField: "Authorization") == Self.header)
        var elsewhere = get("https://evil.example.net/me")
        elsewhere.setValue("text/plain", forHTTPHeaderField: "Accept")
        #expect(try credentials.authorize(elsewhere) == elsewhere)
    }

    @Test func aRedirectToAnotherOriginDropsTheHeaderAndLaterHopsDoNotGetItBack() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(.status(302, headers: ["Location": "https://cdn.example.net/bounce"]))
        transport.stub(.get, path: "/bounce").thenRespond(.status(302, headers: ["Location": "https://api.example.com/final"]))
        transport.stub(.get, path: "/final").thenRespond(.text("final"))
        let client = try HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = try credentials()
        }
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        scheduler.run()
        #expect(probe.values.map(\.text) == ["final"])
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [Self.header, nil, nil])
    }

    @Test func aRedirectWithinTheOriginKeepsIt() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(.status(301, headers: ["Location": "/v2/me"]))
        transport.stub(.get, path: "/v2/me").thenRespond(.text("me"))
        let client = try HTTPClient(transport: transport) {
            $0.scheduler = scheduler
            $0.authorizer = try credentials()
        }
        _ = RequestProbe(client.send(get("https://api.example.com/me")))
        scheduler.run()
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [Self.header, Self.header])
    }

    @Test func a401IsDeliveredOnceAndNeverReplayed() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(.status(401, headers: ["WWW-Authenticate": #"Basic realm="api", charset="UTF-8""#]))
        let log = EventLog()
        let client = try HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.authorizer = try credentials()
        }
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        scheduler.run()
        #expect(probe.values.map(\.statusCode) == [401])
        #expect(probe.isFinished && probe.terminalCount == 1 && probe.violations == 0)
        #expect(transport.requests.count == 1, "no replay")
        #expect(log.count("credentialRenewalDeclined") == 1 && log.count("credentialRenewalFailed") == 0)

        let failed = RequestProbe(client.send(get("https://api.example.com/me")).catchHTTPErrors())
        scheduler.run()
        let error = try #require(failed.failure as? HTTPClientError)
        #expect(error.statusCode == 401)
        #expect(error.response?.head.value(forHTTPHeaderField: "WWW-Authenticate")?.hasPrefix("Basic") == true)
        #expect(transport.requests.count == 2)
    }

    @Test func renewingFinishesAtOnceWithoutAValue() throws {
        let probe = RequestProbe(try credentials().renewCredentials(after: get("https://api.example.com/me"), scheduler: ImmediateScheduler()))
        #expect(probe.events.count == 1 && probe.isFinished)
    }

    @Test func neitherTheDescriptionsNorDumpShowThePassword() throws {
        let credentials = try credentials(["api.example.com", "*.files.example.com"])
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in [String(describing: credentials), String(reflecting: credentials), dumped, "\(credentials)",
                     String(describing: [credentials]), String(describing: Optional(credentials))] {
            #expect(!text.contains("pässwörd") && !text.contains("YWxpY2U6cMOkc3N3w7ZyZA==") && !text.contains("cMOkc3N3"), "\(text)")
            #expect(text.contains("alice") && text.contains("redacted"), "\(text)")
        }
        #expect(String(describing: credentials).contains("api.example.com"))
    }

    @Test func theMonitorsAndTheResponseShowNoCredentials() throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/me").thenRespond(.text("me"))
        let log = EventLog()
        let client = try HTTPClient(transport: transport) {
            $0.monitors = [log]
            $0.scheduler = scheduler
            $0.authorizer = try credentials()
        }
        let probe = RequestProbe(client.send(get("https://api.example.com/me")))
        scheduler.run()
        let response = try #require(probe.values.first)
        #expect(response.request.value(forHTTPHeaderField: "Authorization") == Self.header)
        var texts = log.events.map { String(describing: $0) } + log.events.map { String(reflecting: $0) }
        texts += [String(describing: response), String(reflecting: response), response.request.curlDescription()]
        #expect(!log.events.isEmpty)
        for text in texts {
            #expect(!text.contains("cMOkc3N3") && !text.contains("pässwörd"), "\(text)")
        }
    }
}
