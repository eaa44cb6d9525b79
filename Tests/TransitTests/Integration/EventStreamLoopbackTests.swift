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
        let run = {
            try await check.run {
                URLSessionTransport(configuration: URLSessionConfiguration.loopbackTests())
            }
        }
        #if canImport(FoundationNetworking)
        if check.name == "event stream line limit" {
            // The stream fails at the limit on every run (any other failure is an issue). On a
            // heavily loaded machine the loopback server has, now and then, not seen Linux
            // Foundation's cancelled task close its connection within the check's 30 s; the
            // AsyncHTTPClient transport closes it every time.
            try await withKnownIssue("Linux Foundation does not always close a cancelled task's connection promptly under load", isIntermittent: true) {
                try await run()
            } matching: { issue in
                issue.error.map { String(describing: $0).contains("was not closed after the line limit") } ?? false
            }
            return
        }
        #endif
        try await run()
    }
}
