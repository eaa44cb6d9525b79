import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Transit
@testable import TransitAsyncHTTPClient
import TransitTesting

/// The transport conformance suite (`TransportConformance`) against the transport's own SwiftNIO
/// path, the one that carries requests to pinned hosts: a transport that routes every request
/// through it (plain http included), one test per check, each with its own transport.
@Suite("Pinned path conformance")
struct PinnedPathConformanceTests {
    @Test(arguments: TransportConformance.checks)
    func conforms(_ check: TransportConformance.Check) async throws {
        let transport = AsyncHTTPClientTransport(routesEverythingThroughNIO: true)
        do {
            try await check.run { transport }
        } catch {
            try await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
    }
}
