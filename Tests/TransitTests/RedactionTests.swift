import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
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
