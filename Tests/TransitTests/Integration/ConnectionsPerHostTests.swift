import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
import TransitTesting

/// How many connections `URLSessionTransport` opens to one host at once.
@Suite("URLSessionTransport: connections per host")
struct ConnectionsPerHostTests {
    @Test func theDefaultConfigurationAllowsTheDocumentedConnectionsPerHost() {
        #expect(URLSessionTransport.defaultConfiguration.httpMaximumConnectionsPerHost == 64)
    }

    /// 24 requests the server holds until all 24 have arrived: with six connections per host
    /// (Foundation's default) only six would ever arrive.
    @Test func manyConcurrentRequestsToOneHostAreAllInFlightAtOnce() async throws {
        let count = 24
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.timeoutIntervalForRequest = 600
        let transport = URLSessionTransport(configuration: configuration)
        try await withLoopbackServer { server in
            let gate = LoopbackGate("all in flight")
            defer { gate.open() }
            for _ in 0..<count { server.enqueue(.scripted([.wait(gate), .send(Data("done".utf8))])) }
            let recorders = (0..<count).map { index in
                let recorder = TransportRecorder()
                let token = recorder.subscribe(to: transport.send(URLRequest(url: server.url("/held/\(index)"))))
                return (recorder, token)
            }
            let allArrived = await gate.waitUntilReached(count: count, timeout: .seconds(20))
            #expect(allArrived, "\(gate.reachedCount) of \(count) requests reached the server at once")
            gate.open()
            for (recorder, token) in recorders {
                #expect(await recorder.waitForCompletion(timeout: .seconds(60)))
                #expect(recorder.responses.first?.text == "done")
                withExtendedLifetime(token) {}
            }
        }
    }
}
