import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitTesting

/// Defects the fuzz targets in Fuzz/ found (see FUZZING.md), one test each, so that they stay
/// fixed without running the fuzzer.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    let transport = StubTransport()

    /// Found by Fuzz/url-builder: Foundation accepts these bases, but libcurl (which URLSession
    /// uses on Linux) refuses them, or Foundation re-encodes the user info and changes the
    /// credentials; they must fail at once with `URLError(.badURL)`, not late in the transport.
    @Test("a base URL whose host, port or user info libcurl reads differently fails with badURL", arguments: [
        "https://api.example.com:99999/v1",                         // port above 65535
        "https://api.example.com:99999999999999999999999/v1",       // Foundation reads no port at all
        "https://api;example.com/v1", "https://api.example.com$/v1", // sub-delimiters in the host
        "http://%1eh/v1", "http://h%41st/v1",                        // percent-encoded host
        "http://[eth0]/v1", "http://[::1/v1",                        // brackets without an IPv6 address
        "http://[fe80::1%25abcdefghijklmnop]/v1",                    // an IPv6 zone longer than 15
        "http://a@b@api.example.com/v1",                             // '@' in the user info
        "http://;h%41ZZZ]]]]]ass@api.example.com/v1",               // Foundation would turn %41 into %2541
    ])
    func baseAuthorityLibcurlRefuses(base: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts"))
        #expect(URLError.matches(probe.failure, .badURL), "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(transport.requests.isEmpty)
    }

    @Test("hosts, ports and user info that every reader reads the same stay accepted", arguments: [
        ("http://127.0.0.1:65535/v1", "http://127.0.0.1:65535/v1/posts"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1/posts"),
        ("http://[fe80::1%25eth0]/v1", "http://[fe80::1%25eth0]/v1/posts"),
        ("https://user:p%40ss@api.example.com:0/v1", "https://user:p%40ss@api.example.com:0/v1/posts"),
        ("https://api-1.example_host.com./v1", "https://api-1.example_host.com./v1/posts"),
        ("https://api.example.com:/v1", "https://api.example.com/v1/posts"),
    ])
    func validAuthorities(base: String, expected: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts"))
        // Sent to the transport (which has no stub for it, so the request then fails there).
        #expect(!URLError.matches(probe.failure, .badURL), "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(transport.requests.first?.url?.absoluteString == expected)
    }
}
