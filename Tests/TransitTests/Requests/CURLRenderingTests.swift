import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit

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
        request.httpBody = Data("line1\nline2".utf8)
        #expect(request.curlDescription() == #"curl -X 'PATCH' --data-raw 'line1\nline2' 'https://api.example.com/a'"#)
        #expect(URLRequest(url: URL(string: "https://api.example.com/a")!).curlDescription() == "curl 'https://api.example.com/a'")
    }
}
