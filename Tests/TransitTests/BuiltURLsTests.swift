import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// RESTAPI remembers the URLs it built (keyed by base URL and endpoint): a remembered URL must be
/// exactly the one a fresh build gives, a changed base must be read again, and refused input must
/// be refused every time.
@Suite struct BuiltURLsTests {
    /// A service whose base URL can change between requests.
    private struct MovingService: RESTAPI {
        let base: SharedValue<String>
        let client: HTTPClient
        var baseURL: String { base.value }
    }

    private func send(_ signal: Signal<HTTPResponse, any Error>) -> (any Error)? {
        let failure = SharedValue<(any Error)?>(nil)
        let token = signal.sink(receiveCompletion: { completion in
            if case .failure(let error) = completion { failure.value = error }
        }, receiveValue: { _ in })
        token.cancel()
        return failure.value
    }

    @Test func aBaseURLThatChangesBetweenRequestsIsReadAgain() {
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("ok"))
        let service = MovingService(base: SharedValue("https://one.example.test/v1"), client: HTTPClient(transport: transport))
        #expect(send(service.get(endpoint: "posts")) == nil)
        service.base.value = "https://two.example.test/v2"
        #expect(send(service.get(endpoint: "posts")) == nil)
        #expect(transport.requests.map { $0.url?.absoluteString } == [
            "https://one.example.test/v1/posts",
            "https://two.example.test/v2/posts",
        ])
    }

    @Test func moreEndpointsThanTheTableHoldsEachReachTheirOwnURLTwice() {
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("ok"))
        let service = StubbedService(transport: transport)
        let endpoints = (0..<600).map { "posts/\($0)?page=\($0 % 7)" }
        for _ in 0..<2 {
            for endpoint in endpoints { #expect(send(service.get(endpoint: endpoint)) == nil) }
        }
        let expected = endpoints.map { "https://api.example.com/v1/\($0)" }
        #expect(transport.requests.map { $0.url?.absoluteString ?? "" } == expected + expected)
    }

    @Test func anEndpointThatIsRefusedIsRefusedEveryTime() {
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("ok"))
        let service = StubbedService(transport: transport)
        for _ in 0..<3 {
            #expect(URLError.matches(send(service.get(endpoint: "../admin")), .badURL))
            #expect(URLError.matches(send(service.get(endpoint: "a b")), .badURL))
        }
        #expect(transport.requests.isEmpty)
    }

    /// An endpoint and a base URL that `String` equality calls equal to ones already built
    /// (canonical equivalence: U+212A KELVIN SIGN equals "K") but whose bytes differ are built
    /// from their own bytes, and refused, not handed the URL of the other spelling.
    @Test func aCanonicallyEquivalentSpellingIsNotHandedTheURLBuiltForAnother() {
        let kelvin = "\u{212A}"
        #expect("K" == kelvin)
        let transport = StubTransport()
        transport.stub(.get).thenRespond(.text("ok"))
        let service = MovingService(base: SharedValue("https://kelvin.example.test/K"), client: HTTPClient(transport: transport))
        for _ in 0..<2 {
            #expect(send(service.get(endpoint: "K")) == nil)
            #expect(URLError.matches(send(service.get(endpoint: kelvin)), .badURL))
        }
        service.base.value = "https://kelvin.example.test/" + kelvin
        #expect(URLError.matches(send(service.get(endpoint: "K")), .badURL))
        #expect(transport.requests.map { $0.url?.absoluteString } == [
            "https://kelvin.example.test/K/K",
            "https://kelvin.example.test/K/K",
        ])
    }
}
