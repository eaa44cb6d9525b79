import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Defects: a `timeoutInterval` that is NaN, infinite or huge reached Foundation, which traps on
/// it on Linux (it converts the seconds to `Int` milliseconds); and a URL with user-info was sent
/// as Basic by one transport and silently without it by another. The client checks every field of
/// the final request that Foundation converts or traps on before anything is sent: a refused
/// request fails with a ``URLRequestError``, once, and nothing reaches the transport.
@Suite("Request fields are checked before anything is sent")
struct RequestFieldValidationTests {
    /// A field set on the request, and what the client must answer.
    struct Row: Sendable, CustomStringConvertible {
        let description: String
        let change: @Sendable (inout URLRequest) -> Void
        /// `nil`: the request is sent.
        let refusal: (@Sendable (URLRequestError) -> Bool)?
    }

    static func timeout(_ seconds: TimeInterval, refused: Bool) -> Row {
        let refusal: @Sendable (URLRequestError) -> Bool = { error in
            guard case .invalidTimeout(let value) = error else { return false }
            return value.bitPattern == seconds.bitPattern || (value.isNaN && seconds.isNaN)
        }
        return Row(description: "timeoutInterval \(seconds)", change: { $0.timeoutInterval = seconds }, refusal: refused ? refusal : nil)
    }

    static func url(_ text: String, _ refusal: (@Sendable (URLRequestError) -> Bool)?) -> Row {
        Row(description: "url \(text)", change: { $0.url = URL(string: text)! }, refusal: refusal)
    }

    static let rows: [Row] = [
        timeout(.nan, refused: true),
        timeout(-.nan, refused: true),
        timeout(.infinity, refused: true),
        timeout(-.infinity, refused: true),
        timeout(1e300, refused: true),
        timeout(9.3e15, refused: true),
        timeout(Double(Int.max), refused: true),
        timeout(URLRequest.maximumTimeoutInterval.nextUp, refused: true),
        timeout(0, refused: true),
        timeout(-0.0, refused: true),
        timeout(-1, refused: true),
        timeout(-1e300, refused: true),
        timeout(.leastNonzeroMagnitude, refused: false),
        timeout(0.001, refused: false),
        timeout(60, refused: false),
        timeout(URLRequest.maximumTimeoutInterval, refused: false),
        url("https://user:pw@api.example.com/x", { $0 == .credentialsInURL("https://***@api.example.com/x") }),
        url("https://user@api.example.com/x", { $0 == .credentialsInURL("https://***@api.example.com/x") }),
        url("https://:pw@api.example.com/x", { $0 == .credentialsInURL("https://***@api.example.com/x") }),
        url("http://u:p@127.0.0.1:8080/x?token=t", { $0 == .credentialsInURL("http://***@127.0.0.1:8080/x?token=REDACTED") }),
        url("ftp://api.example.com/x", { $0 == .unsupportedURL("ftp://api.example.com/x") }),
        url("file:///etc/passwd", { $0 == .unsupportedURL("file:///etc/passwd") }),
        url("data:text/plain,hello", { $0 == .unsupportedURL("data:text/plain,hello") }),
        url("/relative/path", { $0 == .unsupportedURL("/relative/path") }),
        url("https:///no-host", { $0 == .unsupportedURL("https:///no-host") }),
        url("http:no-host", { $0 == .unsupportedURL("http:no-host") }),
        url("HTTPS://API.example.com/x", nil),
        url("http://[::1]:8080/x", nil),
        Row(description: "empty method", change: { $0.httpMethod = "" }, refusal: { $0 == .invalidMethod("") }),
        Row(description: "method with a space", change: { $0.httpMethod = "GE T" }, refusal: { $0 == .invalidMethod("GE T") }),
        Row(description: "header value with CR LF", change: { $0.allHTTPHeaderFields = ["X-A": "a\r\nX: 1"] }, refusal: { $0 == .invalidHeaderValue(name: "X-A") }),
        Row(description: "header value with NUL", change: { $0.allHTTPHeaderFields = ["X-A": "a\u{0}b"] }, refusal: { $0 == .invalidHeaderValue(name: "X-A") }),
        Row(description: "header name with a colon", change: { $0.allHTTPHeaderFields = ["X:A": "a"] }, refusal: { $0 == .invalidHeaderName("X:A") }),
        Row(description: "body and body stream", change: {
            $0.httpMethod = "POST"
            $0.httpBody = Data("a".utf8)
            $0.httpBodyStream = InputStream(data: Data("b".utf8))
        }, refusal: { $0 == .bodyStreamNotSupported }),
        Row(description: "body stream", change: { $0.httpMethod = "POST"; $0.httpBodyStream = InputStream(data: Data("b".utf8)) }, refusal: { $0 == .bodyStreamNotSupported }),
        Row(description: "mainDocumentURL elsewhere", change: { $0.mainDocumentURL = URL(string: "https://other.example.org/")! }, refusal: nil),
        Row(description: "every cache policy", change: { $0.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData }, refusal: nil),
        Row(description: "network service type", change: { $0.networkServiceType = .background }, refusal: nil),
        Row(description: "cookies off", change: { $0.httpShouldHandleCookies = false }, refusal: nil),
    ]

    @Test("each field Foundation traps on or reads differently is refused before the transport", arguments: rows)
    func fieldTable(row: Row) {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport)
        var request = URLRequest(url: URL(string: "https://api.example.com/x")!)
        row.change(&request)
        for signal in [client.send(request).map { _ in () }, client.stream(request).map { _ in () }] {
            let probe = RequestProbe(signal)
            #expect(probe.terminalCount == 1, "\(row)")
            if let refusal = row.refusal {
                let error = probe.failure as? URLRequestError
                #expect(error.map(refusal) == true, "\(row) gave \(String(describing: probe.failure))")
                #expect(transport.requests.isEmpty, "\(row) reached the transport")
            } else {
                #expect(probe.failure == nil, "\(row) gave \(String(describing: probe.failure))")
            }
        }
    }

    @Test("a download of a refused request fails the same way and writes nothing")
    func downloadIsRefused() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("ok"))
        let client = HTTPClient(transport: transport)
        var request = URLRequest(url: URL(string: "https://api.example.com/x")!)
        request.timeoutInterval = .infinity
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID().uuidString)")
        let probe = RequestProbe(client.download(request, to: destination))
        #expect(probe.terminalCount == 1)
        #expect(probe.failure as? URLRequestError == .invalidTimeout(.infinity))
        #expect(transport.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test("withTimeout refuses what the client would refuse, and accepts the largest allowed value")
    func fluentTimeoutUsesTheSameLimit() throws {
        let request = URLRequest(url: URL(string: "https://api.example.com/x")!)
        #expect(throws: URLRequestError.invalidTimeout(1e300)) { try request.withTimeout(1e300) }
        #expect(throws: URLRequestError.invalidTimeout(9.3e15)) { try request.withTimeout(9.3e15) }
        #expect(throws: URLRequestError.invalidTimeout(-1)) { try request.withTimeout(-1) }
        #expect(try request.withTimeout(URLRequest.maximumTimeoutInterval).timeoutInterval == URLRequest.maximumTimeoutInterval)
    }

    @Test("a refused timeout's message says what is allowed")
    func timeoutMessage() {
        let text = URLRequestError.invalidTimeout(1e300).description
        #expect(text.contains("1e+300"), "\(text)")
        #expect(text.contains("at most"), "\(text)")
    }

    @Test("the user-info refusal names an authoriser or an Authorization header and never shows the password")
    func userInfoMessage() throws {
        let transport = StubTransport()
        let client = HTTPClient(transport: transport)
        let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://alice:s3cr3t-pw@api.example.com/v1?access_token=t0k")!)))
        let error = try #require(probe.failure as? URLRequestError)
        for text in [error.description, error.localizedDescription, String(describing: error), String(reflecting: error)] {
            #expect(!text.contains("s3cr3t-pw"), "\(text)")
            #expect(!text.contains("alice"), "\(text)")
            #expect(!text.contains("t0k"), "\(text)")
        }
        #expect(error.description.contains("Authorization"), "\(error.description)")
        #expect(error.description.contains("authoriser") || error.description.contains("Authorizer"), "\(error.description)")
        #expect(transport.requests.isEmpty)
    }

    @Test("a RESTAPI base URL with user-info fails the same way and sends nothing")
    func restBaseURLWithUserInfo() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("ok"))
        for base in ["https://user:pass@api.example.com/v1", "https://user@api.example.com/v1", "https://user:p%40ss@api.example.com:0/v1"] {
            let api = StubbedService(baseURL: base, transport: transport)
            let probe = RequestProbe(api.get(endpoint: "me"))
            let error = try #require(probe.failure as? URLRequestError, "\(base) gave \(String(describing: probe.failure))")
            guard case .credentialsInURL(let shown) = error else {
                Issue.record("\(base) gave \(error)")
                continue
            }
            #expect(shown.hasPrefix("https://***@api.example.com"), "\(shown)")
            #expect(!error.description.contains(":pass") && !error.description.contains("p%40ss") && !error.description.contains("user:"), "\(error.description)")
            #expect(probe.terminalCount == 1)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("a deadline too long to time is clamped, not trapped on, and a negative one has passed")
    func absurdDeadlines() {
        let scheduler = TestScheduler()
        scheduler.advance(by: .seconds(1))
        let transport = StubTransport(scheduler: scheduler)
        transport.stub().thenRespond(StubResponse.text("ok").delayed(by: .seconds(5)))
        for deadline in [Duration(attoseconds: .max), .seconds(Int64.max), .seconds(1e15)] {
            let client = HTTPClient(transport: transport) {
                $0.deadline = .after(deadline)
                $0.scheduler = scheduler
            }
            let probe = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/x")!)))
            let streamed = RequestProbe(client.stream(URLRequest(url: URL(string: "https://api.example.com/x")!), options: RequestOptions(deadline: .after(deadline))))
            scheduler.advance(by: .seconds(5))
            #expect(probe.values.first?.text == "ok", "\(deadline)")
            #expect(streamed.isFinished, "\(deadline)")
        }
        #expect(HTTPClient.timed(.after(Duration(attoseconds: .max))) == ScheduledSubscription.duration(seconds: .infinity))
        #expect(HTTPClient.timed(.after(.seconds(-5))) == .zero)
        #expect(HTTPClient.timed(.unlimited) == nil)
        let client = HTTPClient(transport: transport) {
            $0.deadline = .after(.seconds(-5))
            $0.scheduler = scheduler
        }
        let late = RequestProbe(client.send(URLRequest(url: URL(string: "https://api.example.com/x")!)))
        scheduler.advance()
        #expect(urlErrorCode(late.failure) == .timedOut)
        #expect(late.terminalCount == 1)
    }
}

@Suite("Refresh limits too long to time")
struct RefreshLimitsClampTests {
    @Test("a refresh deadline too long to time is clamped like a request's, not trapped on")
    func absurdRefreshDeadline() {
        let scheduler = TestScheduler()
        scheduler.advance(by: .seconds(1))
        let store = TokenStore(
            token: AuthToken(accessToken: "old"),
            limits: TokenStore.RefreshLimits(deadline: Duration(attoseconds: .max), window: Duration(attoseconds: .max))
        ) { _ in Signal(value: AuthToken(accessToken: "new")).delay(for: .seconds(1), scheduler: scheduler) }
        let probe = RequestProbe(store.freshToken(replacing: "old", scheduler: scheduler))
        scheduler.advance(by: .seconds(1))
        #expect(probe.values.map(\.accessToken) == ["new"])
        #expect(probe.isFinished)
    }
}
