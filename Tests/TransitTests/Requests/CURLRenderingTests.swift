import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Transit

@Suite("cURL rendering")
struct CURLRenderingTests {
    @Test func credentialsAndSecretQueryValuesAreRedacted() {
        var request = URLRequest(url: URL(string: "https://ada:lovelace@api.example.com/v1/posts?page=2&api_key=abc123&token=t0k")!)
        request.httpMethod = "POST"
        request.setValue("Bearer eyJsecret", forHTTPHeaderField: "Authorization")
        request.setValue("session=s3cr3t", forHTTPHeaderField: "Cookie")
        request.setValue("k-123", forHTTPHeaderField: "X-Api-Key")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"title":"it's"}"#.utf8)
        let curl = request.curlDescription()
        #expect(curl == #"curl -X 'POST' -H 'Authorization: Bearer REDACTED' -H 'Content-Type: application/json' -H 'Cookie: REDACTED' -H 'X-Api-Key: REDACTED' --data-raw '{"title":"it'\''s"}' 'https://***@api.example.com/v1/posts?page=2&api_key=REDACTED&token=REDACTED'"#)
        for secret in ["eyJsecret", "s3cr3t", "k-123", "abc123", "t0k", "lovelace"] {
            #expect(!curl.contains(secret), "\(secret) leaked")
        }
    }

    /// A secret header of the application's own (what a client's `sensitiveHeaders` names) is
    /// redacted when the caller names it, whatever its case; other headers stay readable.
    @Test func theApplicationsOwnSecretHeadersAreRedactedWhenNamed() {
        var request = URLRequest(url: URL(string: "https://api.example.com/v1/me")!)
        request.setValue("s3ss10n", forHTTPHeaderField: "X-Tenant-Badge")
        request.setValue("fr", forHTTPHeaderField: "Accept-Language")
        #expect(request.curlDescription().contains("s3ss10n"))
        let curl = request.curlDescription(sensitiveHeaders: ["x-TENANT-badge"])
        #expect(curl == "curl -H 'Accept-Language: fr' -H 'X-Tenant-Badge: REDACTED' 'https://api.example.com/v1/me'")
        let client = HTTPClient { $0.sensitiveHeaders = ["X-Tenant-Badge"] }
        #expect(!request.curlDescription(sensitiveHeaders: client.configuration.sensitiveHeaders).contains("s3ss10n"))
    }

    @Test func largeOrBinaryBodiesAreSummarisedNotPrinted() {
        var request = URLRequest(url: URL(string: "https://api.example.com/upload")!)
        request.httpMethod = "PUT"
        request.httpBody = Data([0xFF, 0xFE, 0x00])
        #expect(request.curlDescription().hasSuffix("'https://api.example.com/upload'  # body: 3 bytes, not shown"))
        request.httpBody = Data(repeating: 0x41, count: 2000)
        #expect(request.curlDescription().hasSuffix("# body: 2000 bytes, not shown"))
        #expect(!request.curlDescription().contains("AAAA"))
    }

    @Test func aGETHasNoMethodFlagAndControlCharactersStayOnOneLine() {
        var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
        request.httpMethod = "PATCH"
        // A body is printed only as a form or JSON (this one is declared a form).
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("line1\nline2".utf8)
        #expect(request.curlDescription() == #"curl -X 'PATCH' -H 'Content-Type: application/x-www-form-urlencoded' --data-raw 'line1\nline2' 'https://api.example.com/a'"#)
        #expect(URLRequest(url: URL(string: "https://api.example.com/a")!).curlDescription() == "curl 'https://api.example.com/a'")
    }

    // MARK: Secrets in bodies

    @Test func aFormBodyShowsNoSecretValue() {
        var request = URLRequest(url: URL(string: "https://auth.example.com/token")!)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(
            "grant_type=refresh_token&refresh_token=RT-7f3a&password=hunter2&client_id=app&client_secret=cs-9d&code=c0de-1&username=ada&Client_Assertion=eyJa.b.c&passwd&PASSWORD=Hunter3".utf8
        )
        let curl = request.curlDescription()
        #expect(curl.contains("--data-raw 'grant_type=refresh_token&refresh_token=REDACTED&password=REDACTED&client_id=app&client_secret=REDACTED&code=REDACTED&username=ada&Client_Assertion=REDACTED&passwd&PASSWORD=REDACTED'"), "\(curl)")
        for secret in ["RT-7f3a", "hunter2", "Hunter3", "cs-9d", "c0de-1", "eyJa"] {
            #expect(!curl.contains(secret), "\(secret) leaked: \(curl)")
        }
    }

    @Test func aFormBodyWithoutAContentTypeIsRedactedToo() {
        var request = URLRequest(url: URL(string: "https://auth.example.com/token")!)
        request.httpMethod = "POST"
        request.httpBody = Data("grant_type=password&username=ada&password=hunter2%21&scope=a+b".utf8)
        #expect(request.curlDescription() == "curl -X 'POST' --data-raw 'grant_type=password&username=ada&password=REDACTED&scope=a+b' 'https://auth.example.com/token'")
    }

    @Test func aJSONBodyShowsNoSecretValueAtAnyDepth() {
        var request = URLRequest(url: URL(string: "https://api.example.com/login")!)
        request.httpMethod = "POST"
        request.setValue("application/json; charset=utf-8", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"""
        {"user":{"name":"ada","password":"p@ss \"quoted\"","tokens":[{"id_token":"it-1"},{"kind":"x"}]},"client_secret":"cs-2","api_key":12345,"Access_Token":null,"apiKey":{"nested":"k-3"},"note":"password=inline","pass\u0077ord":"esc-4","list":[1,2.5e3,true,{"refresh_token":["rt-5"]}]}
        """#.utf8)
        let curl = request.curlDescription()
        let expected = #"{"user":{"name":"ada","password":"REDACTED","tokens":[{"id_token":"REDACTED"},{"kind":"x"}]},"#
            + #""client_secret":"REDACTED","api_key":"REDACTED","Access_Token":"REDACTED","apiKey":"REDACTED","note":"password=inline","pass\u0077ord":"REDACTED","list":[1,2.5e3,true,{"refresh_token":"REDACTED"}]}"#
        #expect(curl.contains("--data-raw '\(expected)'"), "\(curl)")
        for secret in ["p@ss", "quoted", "it-1", "cs-2", "12345", "k-3", "esc-4", "rt-5"] {
            #expect(!curl.contains(secret), "\(secret) leaked: \(curl)")
        }
    }

    @Test func aJSONBodyWithoutAContentTypeIsRedactedAndWhitespaceIsKept() {
        var request = URLRequest(url: URL(string: "https://api.example.com/login")!)
        request.httpMethod = "POST"
        request.httpBody = Data("{ \"secret\" : \"s-1\" ,\n \"name\": \"ada\" }".utf8)
        #expect(request.curlDescription() == #"curl -X 'POST' --data-raw '{ "secret" : "REDACTED" ,\n "name": "ada" }' 'https://api.example.com/login'"#)
    }

    @Test func aBodyThatIsNeitherFormNorJSONIsSummarised() {
        let bodies: [(String?, String)] = [
            (nil, "my password is hunter2"),
            (nil, "hunter2\n"),
            ("text/plain", "password=hunter2"),
            ("application/json", #"{"password":"hunter2""#),
            ("application/json", "password=hunter2"),
            ("application/xml", "<password>hunter2</password>"),
            ("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\nhunter2\r\n--b--"),
        ]
        for (contentType, body) in bodies {
            var request = URLRequest(url: URL(string: "https://api.example.com/upload")!)
            request.httpMethod = "POST"
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
            request.httpBody = Data(body.utf8)
            let curl = request.curlDescription()
            #expect(!curl.contains("hunter2"), "\(curl)")
            #expect(!curl.contains("--data"), "\(curl)")
            #expect(curl.hasSuffix("'https://api.example.com/upload'  # body: \(body.utf8.count) bytes, not shown"), "\(curl)")
        }
    }

    @Test func secretQueryItemsOfOAuthAreRedactedInTheURL() {
        let request = URLRequest(url: URL(string: "https://app.example.com/callback?code=c0de-1&state=s1&client_assertion=eyJa&id_token=it")!)
        #expect(request.curlDescription() == "curl 'https://app.example.com/callback?code=REDACTED&state=s1&client_assertion=REDACTED&id_token=REDACTED'")
    }

    @Test func oneListDecidesBodiesQueriesAndHeaders() {
        let names = [
            "password", "passwd", "secret", "client_secret", "token", "access_token", "refresh_token", "id_token", "api_key",
            "apikey", "code", "assertion", "client_assertion", "PASSWORD", "Client-Secret", "x-api-key",
        ]
        for name in names {
            #expect(Redaction.isSensitiveName(name), "\(name)")
            var request = URLRequest(url: URL(string: "https://api.example.com/a?\(name)=v4lue")!)
            request.httpMethod = "POST"
            request.httpBody = Data("\(name)=b0dy".utf8)
            request.setValue("h3ader", forHTTPHeaderField: name.contains("_") ? name.replacingOccurrences(of: "_", with: "-") : name)
            let curl = request.curlDescription()
            for secret in ["v4lue", "b0dy", "h3ader"] {
                #expect(!curl.contains(secret), "\(name): \(curl)")
            }
        }
        for name in ["state", "username", "grant_type", "client_id", "zip_code", "scope"] {
            #expect(!Redaction.isSensitiveName(name), "\(name)")
        }
    }

    // MARK: JSON in other Unicode encodings

    /// JSON may be UTF-8, UTF-16 or UTF-32, with or without a byte-order mark (RFC 8259, RFC
    /// 4627): each is recognised by its BOM or its pattern of zero bytes, redacted like UTF-8 JSON
    /// and shown as UTF-8 with a note saying so.
    @Test(arguments: [
        (String.Encoding.utf16LittleEndian, false, "UTF-16LE"), (.utf16BigEndian, false, "UTF-16BE"),
        (.utf16LittleEndian, true, "UTF-16LE"), (.utf16BigEndian, true, "UTF-16BE"),
        (.utf32LittleEndian, false, "UTF-32LE"), (.utf32BigEndian, false, "UTF-32BE"),
        (.utf32LittleEndian, true, "UTF-32LE"), (.utf32BigEndian, true, "UTF-32BE"),
        (.utf8, true, "UTF-8"),
    ])
    func aJSONBodyInAnyUnicodeEncodingShowsNoSecretValue(encoding: String.Encoding, byteOrderMark: Bool, name: String) throws {
        let json = #"{"user":"ada","password":"hunter2","nested":{"api_key":"k-3"}}"#
        var body = try #require(json.data(using: encoding))
        if byteOrderMark {
            let marks: [String.Encoding: [UInt8]] = [
                .utf16LittleEndian: [0xFF, 0xFE], .utf16BigEndian: [0xFE, 0xFF], .utf32LittleEndian: [0xFF, 0xFE, 0, 0],
                .utf32BigEndian: [0, 0, 0xFE, 0xFF], .utf8: [0xEF, 0xBB, 0xBF],
            ]
            body = Data(try #require(marks[encoding])) + body
        }
        for contentType in ["application/json", nil] {
            var request = URLRequest(url: URL(string: "https://api.example.com/login")!)
            request.httpMethod = "POST"
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
            request.httpBody = body
            let curl = request.curlDescription(maxBodyBytes: 4096)
            let flattened = curl.replacingOccurrences(of: #"\x00"#, with: "")
            for secret in ["hunter2", "k-3"] {
                #expect(!flattened.contains(secret), "\(name): \(curl)")
            }
            #expect(curl.contains(#"--data-raw '{"user":"ada","password":"REDACTED","nested":{"api_key":"REDACTED"}}'"#), "\(name): \(curl)")
            #expect(curl.hasSuffix("# body: \(body.count) bytes of \(name) JSON, shown as UTF-8"), "\(name): \(curl)")
        }
    }

    /// A body that claims (or looks like) UTF-16 or UTF-32 JSON but cannot be decoded, and a form
    /// in any encoding but UTF-8, are summarised, never printed.
    @Test func aBodyThatCannotBeDecodedIsNotPrinted() {
        let passwordUTF16 = Array(#"{"password":"hunter2"}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let bodies: [(String?, [UInt8])] = [
            ("application/json", passwordUTF16 + [0x00, 0xD8]),          // an unpaired surrogate
            ("application/json", passwordUTF16 + [0x7D]),                // an odd number of bytes
            ("application/json", [0, 0, 0, 0x7B] + [0, 0x11, 0, 0]),     // beyond Unicode in UTF-32BE
            ("application/x-www-form-urlencoded", Array("password=hunter2".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }),
            (nil, Array("password=hunter2".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
        ]
        for (contentType, bytes) in bodies {
            var request = URLRequest(url: URL(string: "https://api.example.com/login")!)
            request.httpMethod = "POST"
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
            request.httpBody = Data(bytes)
            let curl = request.curlDescription(maxBodyBytes: 4096)
            #expect(!curl.contains("--data"), "\(curl)")
            #expect(curl.hasSuffix("# body: \(bytes.count) bytes, not shown"), "\(curl)")
        }
    }
}
