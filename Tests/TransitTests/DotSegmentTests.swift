import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Defect: an endpoint with dot segments left the base path. `…/tenants/42` + `../../admin/users`
/// reached `/admin/users` (the URL stack removes dot segments before sending), and
/// `%2e%2e/%2e%2e/admin` reached `/admin` at a server that decodes before normalising.
@Suite("Dot segments in endpoints and base URLs")
struct DotSegmentTests {
    let transport: StubTransport = {
        let transport = StubTransport()
        transport.stub().thenRespond(.text("ok"))
        return transport
    }()

    @Test("an endpoint path with a '.' or '..' segment, in any spelling, fails with badURL and sends nothing", arguments: [
        "../../admin/users", "..", ".", "./posts", "posts/.", "posts/..", "posts/../admin", "posts/./1",
        "/../admin", "..?q=1", "posts/..#top", "a/b/../../..",
        "%2e%2e/%2e%2e/admin", "%2E%2E/admin", "%2e%2E", ".%2e/admin", "%2e./admin", "%2E.", ".%2E",
        "%2e", "%2E", "posts/%2e/1", "posts/%2e%2e", "%2e%2e?x=1",
        // Encoded separators make a dot segment for a server that decodes before splitting.
        "..%2fadmin", "..%2Fadmin", "%2e%2e%2fadmin", "posts/..%5cadmin", "x%2f..%2f..%2fadmin",
    ])
    func dotSegmentsInTheEndpoint(endpoint: String) throws {
        let api = StubbedService(baseURL: "https://api.example.com/tenants/42", transport: transport)
        let modifierRuns = SharedValue(0)
        let probe = RequestProbe(api.get(endpoint: endpoint) { request in
            modifierRuns.update { $0 += 1 }
            return request
        })
        let error = try #require(probe.failure as? URLError, "\(endpoint.debugDescription) gave \(String(describing: probe.failure)); sent \(transport.requests.map { $0.url?.absoluteString ?? "" })")
        #expect(error.code == .badURL)
        #expect(error.localizedDescription.contains("dot segment"), "\(error.localizedDescription)")
        #expect(probe.terminalCount == 1)
        #expect(modifierRuns.value == 0)
        #expect(transport.requests.isEmpty)
    }

    @Test("a base URL whose path has a dot segment fails with badURL and sends nothing", arguments: [
        "https://api.example.com/v1/../admin", "https://api.example.com/./v1", "https://api.example.com/v1/..",
        "https://api.example.com/%2e%2e/admin", "https://api.example.com/v1/.%2E", "https://api.example.com/v1/%2E",
    ])
    func dotSegmentsInTheBase(base: String) throws {
        let api = StubbedService(baseURL: base, transport: transport)
        let probe = RequestProbe(api.get(endpoint: "posts"))
        let error = try #require(probe.failure as? URLError, "\(base.debugDescription) gave \(String(describing: probe.failure))")
        #expect(error.code == .badURL)
        #expect(error.localizedDescription.contains("dot segment"), "\(error.localizedDescription)")
        #expect(transport.requests.isEmpty)
    }

    @Test("dots that are not whole segments, and dots in the query or fragment, are fine", arguments: [
        ("posts/v1.2", "/tenants/42/posts/v1.2"), ("...", "/tenants/42/..."), ("posts/.well-known", "/tenants/42/posts/.well-known"),
        ("a..b/c.", "/tenants/42/a..b/c."), ("files/%2e%2e%2e", "/tenants/42/files/%2e%2e%2e"),
        ("files/.%2e.", "/tenants/42/files/.%2e."), ("group%2Fproject", "/tenants/42/group%2Fproject"),
        ("search?path=../../etc&x=./y", "/tenants/42/search"), ("posts#../..", "/tenants/42/posts"),
        ("posts?q=%2e%2e", "/tenants/42/posts"),
    ])
    func harmlessDots(endpoint: String, path: String) throws {
        let api = StubbedService(baseURL: "https://api.example.com/tenants/42", transport: transport)
        let probe = RequestProbe(api.get(endpoint: endpoint))
        #expect(probe.isFinished, "\(endpoint.debugDescription) gave \(String(describing: probe.failure))")
        let url = try #require(transport.requests.first?.url)
        #expect(url.absoluteString.hasPrefix("https://api.example.com/tenants/42/"))
        #expect(URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath == path)
    }
}
