import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitTesting

/// Server-Sent Events over `URLSessionTransport` and a loopback server
/// (`TransportConformance.eventStreamChecks`): reconnection after a drop mid-event, a line without
/// end failing at the limit, cancellation closing the connection.
@Suite("Server-Sent Events over URLSessionTransport")
struct EventStreamLoopbackTests {
    @Test(arguments: TransportConformance.eventStreamChecks)
    func conforms(_ check: TransportConformance.Check) async throws {
        try await check.run {
            URLSessionTransport(configuration: URLSessionConfiguration.loopbackTests())
        }
    }
}
