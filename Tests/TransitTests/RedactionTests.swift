import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Secrets the tests put into URLs and headers; none may appear in any description.
private let secrets = ["s3cr3t-pw", "tok-4f9a", "key-77c1", "sig-0b1d", "bearer-9e2f", "cookie-5a5a"]

/// Every way an error is commonly printed.
private func renderings(of error: any Error) -> [String] {
    [String(describing: error), String(reflecting: error), error.localizedDescription, "\(error)"]
}

private func expectNoSecrets(in error: any Error, sourceLocation: SourceLocation = #_sourceLocation) {
    for text in renderings(of: error) {
        for secret in secrets {
            #expect(!text.contains(secret), "\(secret) leaked into: \(text)", sourceLocation: sourceLocation)
        }
    }
}

/// Defect: error descriptions printed `https://user:password@…` (and secret query values) into
/// logs.
@Suite("Redaction of credentials in descriptions")
struct RedactionTests {
    static let secretURL = "https://alice:s3cr3t-pw@api.example.com/v1/things?page=2&token=tok-4f9a&X-Api-Key=key-77c1&sig=sig-0b1d"

    @Test("an HTTP error's description shows neither user-info nor secret query values")
    func httpErrorDescription() throws {
        let response = makeResponse(status: 404, url: Self.secretURL)
        let error = try #require(makeHTTPError(for: response))
        expectNoSecrets(in: error)
        #expect(error.description.contains("HTTP 404 Not Found for GET https://"))
        #expect(error.description.contains("api.example.com/v1/things?page=2&token=REDACTED"), "\(error.description)")
        #expect(!error.description.contains("alice"))
    }

    @Test("a bad endpoint's URLError does not repeat the base URL's password or a secret query value")
    func badURLDescriptions() throws {
        let transport = StubTransport()
        for (base, endpoint) in [
            ("https://alice:s3cr3t-pw@api.example.com/v1", "posts/a b"),
            ("https://alice:s3cr3t-pw@api.example.com/v1 x", "posts"),
            ("https://alice:s3cr3t-pw@api.example.com/v1?x=1", "posts"),
            ("https://api.example.com/v1", "posts/a b?access_token=tok-4f9a"),
            ("https://api.example.com/v1", "posts/../x?api_key=key-77c1"),
        ] {
            let probe = RequestProbe(StubbedService(baseURL: base, transport: transport).get(endpoint: endpoint))
            let error = try #require(probe.failure as? URLError, "\(base) + \(endpoint) gave \(String(describing: probe.failure))")
            #expect(error.code == .badURL)
            expectNoSecrets(in: error)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("a transport failure through a client shows no password, secret query value or Authorization")
    func transportFailureDescription() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.failure(URLError(.timedOut)))
        let api = StubbedService(baseURL: "https://alice:s3cr3t-pw@api.example.com/v1", transport: transport)
        let probe = RequestProbe(api.get(endpoint: "things?token=tok-4f9a") { request in
            var request = request
            request.setValue("Bearer bearer-9e2f", forHTTPHeaderField: "Authorization")
            request.setValue("session=cookie-5a5a", forHTTPHeaderField: "Cookie")
            return request
        })
        let error = try #require(probe.failure)
        expectNoSecrets(in: error)
        #expect(String(describing: error).contains("api.example.com/v1/things?token=REDACTED"), "\(error)")
    }
}

@Suite("Redaction helpers")
struct RedactionHelperTests {
    @Test("user-info and secret query and fragment values are redacted; the rest is kept byte for byte", arguments: [
        ("https://alice:pw@api.example.com/v1?x=1", "https://***@api.example.com/v1?x=1"),
        ("https://token@api.example.com/", "https://***@api.example.com/"),
        ("https://api.example.com/v1/things?page=2&token=abc&Q=a%2Bb", "https://api.example.com/v1/things?page=2&token=REDACTED&Q=a%2Bb"),
        ("https://h.test/?access_token=a&api_key=b&apikey=c&KEY=d&password=e&secret=f&signature=g&sig=h&auth=i",
         "https://h.test/?access_token=REDACTED&api_key=REDACTED&apikey=REDACTED&KEY=REDACTED&password=REDACTED&secret=REDACTED&signature=REDACTED&sig=REDACTED&auth=REDACTED"),
        ("https://h.test/?x-api-key=1&X-Amz-Signature=2&refresh_token=3&clientSecret=4&accessToken=5&api%5Fkey=6",
         "https://h.test/?x-api-key=REDACTED&X-Amz-Signature=REDACTED&refresh_token=REDACTED&clientSecret=REDACTED&accessToken=REDACTED&api%5Fkey=REDACTED"),
        ("https://h.test/cb#access_token=abc&state=xyz", "https://h.test/cb#access_token=REDACTED&state=xyz"),
        ("https://h.test/p?monkey=1&keyword=2&token_type=bearer&tokens=3&flag&=4", "https://h.test/p?monkey=1&keyword=2&token_type=bearer&tokens=3&flag&=4"),
        ("posts?token=abc", "posts?token=REDACTED"),
        ("https://alice:pw@api.example.com/v 1?key=x y", "https://***@api.example.com/v 1?key=REDACTED"),
        ("https://api.example.com/a@b?x=1", "https://api.example.com/a@b?x=1"),
        ("", ""),
    ])
    func urls(input: String, expected: String) {
        #expect(Redaction.redact(urlString: input) == expected)
        // Through URL too, where Foundation keeps the text as written.
        if let url = URL(string: input), url.scheme != nil, url.absoluteString == input {
            #expect(url.redactedForLogging == expected)
        }
    }

    @Test("URLs inside free text are redacted wherever they appear")
    func urlsInText() {
        // A URL in text runs to the next space, quote or angle bracket: a comma after a secret
        // value is taken as part of it (redacting too much is safe, too little is not).
        let text = #"Error Domain=NSURLErrorDomain UserInfo={NSErrorFailingURLKey=https://u:p@h.test/a?token=t1, other="see http://h.test/b?sig=s2&ok=1" (ftp://x:y@z/)}"#
        #expect(Redaction.redactingURLs(in: text)
            == #"Error Domain=NSURLErrorDomain UserInfo={NSErrorFailingURLKey=https://***@h.test/a?token=REDACTED other="see http://h.test/b?sig=REDACTED&ok=1" (ftp://***@z/)}"#)
        #expect(Redaction.redactingURLs(in: "no URL here, token=abc") == "no URL here, token=abc")
    }

    @Test("sensitive header names", arguments: [
        ("Authorization", true), ("proxy-authorization", true), ("Cookie", true), ("Set-Cookie", true),
        ("X-API-Key", true), ("X-Auth-Token", true), ("Api-Key", true), ("X-Amz-Security-Token", true),
        ("x-apikey", true), ("X-Client-Secret", true), ("Accept", false), ("Content-Type", false),
        ("User-Agent", false), ("X-Request-ID", false), ("Keep-Alive", false), ("X-Monkey", false),
    ])
    func sensitiveHeaders(field: String, sensitive: Bool) {
        #expect(Redaction.isSensitiveHeader(field) == sensitive)
    }

    @Test("header values: the scheme of Authorization is kept, other secrets are replaced, the rest is kept")
    func headerValues() {
        #expect(Redaction.redact(headerValue: "Bearer abc.def", forField: "Authorization") == "Bearer REDACTED")
        #expect(Redaction.redact(headerValue: "Basic dXNlcjpwdw==", forField: "proxy-authorization") == "Basic REDACTED")
        #expect(Redaction.redact(headerValue: "abc", forField: "Authorization") == "REDACTED")
        #expect(Redaction.redact(headerValue: "sid=1; theme=dark", forField: "Cookie") == "REDACTED")
        #expect(Redaction.redact(headerValue: "k-123", forField: "X-API-Key") == "REDACTED")
        #expect(Redaction.redact(headerValue: "application/json", forField: "Accept") == "application/json")
        let headers = Redaction.redact(headers: [
            "Authorization": "Bearer t", "Set-Cookie": "a=b", "Accept": "text/plain", "X-Auth-Token": "x",
        ])
        #expect(headers == ["Authorization": "Bearer REDACTED", "Set-Cookie": "REDACTED", "Accept": "text/plain", "X-Auth-Token": "REDACTED"])
    }
}
