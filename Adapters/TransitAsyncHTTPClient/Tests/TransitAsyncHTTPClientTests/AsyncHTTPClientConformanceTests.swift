import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
import TransitAsyncHTTPClient
import TransitTesting

/// The transport conformance suite (`TransportConformance`, the same checks the root package runs
/// against `URLSessionTransport`) against `AsyncHTTPClientTransport`: one test per check, each with
/// its own transport (its own connection pool), shut down afterwards.
@Suite("AsyncHTTPClientTransport conformance")
struct AsyncHTTPClientConformanceTests {
    @Test(arguments: TransportConformance.checks)
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

    @Test func theSharedTransportConformsToo() async throws {
        // One check that exercises the most, on the process-wide transport (never shut down).
        let check = try #require(TransportConformance.checks.first { $0.name == "concurrent requests" })
        try await check.run { AsyncHTTPClientTransport.shared }
    }
}
