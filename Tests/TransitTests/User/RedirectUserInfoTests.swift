import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// A redirect whose `Location` carries user-info (`https://user:pw@other/…`) asks the client to
/// send credentials the user never gave: URLSession would send them as Basic, another transport
/// would drop them. The client refuses user-info in the URLs it is given, so it refuses the
/// redirect too, and nothing is sent to the Location.
@Suite("Redirects: user-info in the Location")
struct RedirectUserInfoTests {
    let scheduler = TestScheduler()

    private func client(_ transport: StubTransport, _ policy: RedirectPolicy = .follow) -> HTTPClient {
        HTTPClient(transport: transport) {
            $0.redirectPolicy = policy
            $0.scheduler = scheduler
        }
    }

    private static let locations = [
        "https://mallory:pw@evil.example.net/x",
        "https://mallory@evil.example.net/x",
        "https://:pw@evil.example.net/x",
        "https://user:pw@api.example.com/next",   // the same origin
        "//user:pw@api.example.com/next",          // a network-path reference
    ]

    @Test("a Location with user-info is refused, nothing is sent to it, and the error shows no password",
          arguments: locations)
    func userInfoInTheLocationIsRefused(location: String) throws {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/start").thenRespond(.status(302, headers: ["Location": location]))
        transport.stub(matching: { _ in true }).thenRespond(.text("followed"))
        let probe = RequestProbe(client(transport).send(URLRequest(url: URL(string: "https://api.example.com/start")!)))
        scheduler.run()
        #expect(probe.values.isEmpty)
        #expect(transport.requests.count == 1, "the Location was followed: \(transport.requests.map { $0.url?.absoluteString ?? "" })")
        let error = try #require(probe.failure as? RedirectError)
        #expect(error == .credentialsInLocation(status: 302, to: location.contains("evil") ? "https://evil.example.net" : "https://api.example.com"))
        #expect(!String(describing: error).contains("pw") && !String(describing: error).contains("mallory"))
        #expect(!String(describing: error).contains("user:"))
    }

    /// (A Location from `https` to `http` is refused as insecure first, user-info or not.)
    @Test("the policy refuses it whatever the status, and a Location without user-info is followed")
    func thePolicyRefusesEveryRedirectStatus() throws {
        let current = try #require(URL(string: "https://api.example.com/start"))
        for status in [301, 302, 303, 307, 308] {
            let head = HTTPResponseHead(url: current, statusCode: status, headerFields: ["Location": "https://u:p@api.example.com:8443/x"])
            let next = RedirectPolicy.follow.next(after: head, to: TransportRequest(URLRequest(url: current)), hops: 0, sensitiveHeaders: [])
            guard case .failure(let error)? = next else {
                Issue.record("\(status): \(String(describing: next))")
                continue
            }
            #expect(error == .credentialsInLocation(status: status, to: "https://api.example.com:8443"), "\(status)")
        }
        let plain = HTTPResponseHead(url: current, statusCode: 302, headerFields: ["Location": "https://evil.example.net/x"])
        let next = RedirectPolicy.follow.next(after: plain, to: TransportRequest(URLRequest(url: current)), hops: 0, sensitiveHeaders: [])
        guard case .success(let followed)? = next else {
            Issue.record("\(String(describing: next))")
            return
        }
        #expect(followed.urlRequest.url?.absoluteString == "https://evil.example.net/x")
    }

    @Test("with sameOrigin, a Location with user-info on another origin is delivered unfollowed, as any other")
    func sameOriginDeliversAnotherOrigin() {
        let transport = StubTransport(scheduler: scheduler)
        transport.stub(.get, path: "/start").thenRespond(.status(302, headers: ["Location": "https://u:p@evil.example.net/x"]))
        let probe = RequestProbe(client(transport, .sameOrigin).send(URLRequest(url: URL(string: "https://api.example.com/start")!)))
        scheduler.run()
        #expect(probe.values.map(\.statusCode) == [302])
        #expect(transport.requests.count == 1)
    }
}
