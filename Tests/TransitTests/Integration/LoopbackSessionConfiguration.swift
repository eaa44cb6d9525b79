import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionConfiguration {
    /// The configuration of the integration tests' URLSessions: ephemeral, with an idle timeout
    /// (for requests that set none themselves) far longer than any test waits.
    ///
    /// A test then fails on its own condition, never on URLSession's timer. With the default 60 s,
    /// a thread-sanitizer run on a machine that stalls (the whole process paused for tens of
    /// seconds) failed cancellation tests with `URLError(.timedOut)`: libcurl's timer is armed
    /// when the transfer is configured, so a stalled connect used up the 60 s before the test
    /// could cancel the request. Tests of the idle timeout set `URLRequest.timeoutInterval`.
    static func loopbackTests() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 600
        return configuration
    }
}
