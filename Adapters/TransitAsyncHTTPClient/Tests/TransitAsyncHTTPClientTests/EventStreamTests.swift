import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitAsyncHTTPClient
import TransitTesting

/// Server-Sent Events over `AsyncHTTPClientTransport` and a loopback server: the same checks the
/// root package runs over `URLSessionTransport` (`TransportConformance.eventStreamChecks`) —
/// reconnection after a drop mid-event with `Last-Event-ID`, a line without end failing at the
/// limit, cancellation closing the connection. Each check has its own transport, shut down after.
@Suite("Server-Sent Events over AsyncHTTPClientTransport")
struct EventStreamTests {
    @Test(arguments: TransportConformance.eventStreamChecks)
    func conforms(_ check: TransportConformance.Check) async throws {
        let transport = AsyncHTTPClientTransport()
        do {
            try await check.run { transport }
        } catch {
            try await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
    }
}
