import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// Defect: the method of a failed attempt travelled as a string key in `URLError.userInfo`
/// (`HTTPClient.requestMethodKey`): Transit carried its own metadata on a type it does not own.
@Suite("Transport errors from a client")
struct TransportErrorTests {
    private struct API: RESTAPI {
        let baseURL = "https://api.example.test/v1"
        let client: HTTPClient
    }

    @Test("a failed attempt's error carries no Transit metadata in userInfo")
    func noStringKeysInUserInfo() throws {
        let transport = StubTransport()
        transport.stub(.put, path: "/v1/items/1").thenRespond(.failure(URLError(.timedOut)))
        let probe = RequestProbe(API(client: HTTPClient(transport: transport)).put(endpoint: "items/1"))
        let failure = try #require(probe.failure)
        #expect(!(failure is URLError), "the transport's URLError is wrapped in Transit's own error type")
        if let urlError = failure as? URLError {
            #expect(urlError.userInfo.keys.allSatisfy { !$0.hasPrefix("Transit") }, "\(urlError.userInfo.keys)")
        }
    }
}
