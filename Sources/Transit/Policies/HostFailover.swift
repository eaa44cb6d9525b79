import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Host failover: a service reachable at several origins (`https://api.example.com`,
/// `https://api-backup.example.com`). A connection-level failure on one marks it bad for
/// its `quarantine` and sends the request, when that is safe, to the next healthy origin; a bad
/// origin recovers by itself once its quarantine ends.
///
/// Attach it to a client (``HTTPClient/Configuration/failover``): every request whose origin is
/// one of its `origins` goes to the first healthy origin in order (the first is the preferred one), with
/// its path, query, method, headers and body unchanged. Credentials in the request go to the
/// other origins of the group: list only origins of the same service.
///
/// What counts as a connection-level failure: the host could not be found or reached
/// (`.cannotFindHost`, `.dnsLookupFailed`, `.cannotConnectToHost`), TLS failed
/// (`.secureConnectionFailed`, and the certificate codes `.serverCertificateUntrusted`,
/// `.serverCertificateHasUnknownRoot`, `.serverCertificateHasBadDate`,
/// `.serverCertificateNotYetValid`, `.clientCertificateRejected`, on every platform), or the connection was reset or lost
/// (`.networkConnectionLost`). A request is resent after the first kinds whatever its method
/// (nothing reached the server); after a lost connection only if its method is idempotent. HTTP
/// statuses (a 503) are answers, not connection failures: they are left to retry policies.
///
/// When every origin is quarantined, the request still goes to the one whose quarantine ends
/// first, rather than failing without trying.
///
/// Quarantines are timed by the scheduler of the client that sends the request
/// (``HTTPClient/Configuration/scheduler``); clients sharing one group share its quarantines, and
/// should share a scheduler.
///
/// The client's ``HTTPEventMonitor``s are told about each quarantine, each failover and each
/// recovery (``HTTPEvent/Kind/hostQuarantined(origin:duration:error:)``,
/// ``HTTPEvent/Kind/failover(from:to:error:)``, ``HTTPEvent/Kind/hostRecovered(origin:)``).
///
/// Thread safety: state behind one lock.
public final class HostFailover: Sendable {
    /// The origins, in order of preference, as `scheme://host:port`.
    let origins: [String]
    /// How long a failed origin is avoided.
    let quarantine: Duration
    private let badUntil = Locked<[String: Duration]>([:])

    /// Creates a failover group.
    ///
    /// - Parameters:
    ///   - origins: the origins of one service, preferred first (`https://api.example.com`,
    ///     `https://api2.example.com:8443`); paths are ignored.
    ///   - quarantine: how long a failed origin is avoided (30 s by default).
    public init(origins: [String], quarantine: Duration = .seconds(30)) {
        self.origins = origins.compactMap { URL(string: $0).flatMap(Self.origin) }
        self.quarantine = quarantine
    }

    /// `scheme://host:port` of `url`, with the scheme's default port made explicit; `nil` without
    /// a scheme or a host. Plain URLs are read in one scan of their bytes (see ``URLOrigin``).
    static func origin(_ url: URL) -> String? {
        URLOrigin.hostOrigin(url)
    }

    /// Whether `origin` is out of quarantine now, on `scheduler`'s clock.
    func isHealthy(_ origin: String, on scheduler: any Scheduler) -> Bool {
        let now = scheduler.now
        return badUntil.withLock { ($0[origin] ?? .zero) <= now }
    }

    /// The origins to try for `request`, in order: healthy ones first (in preference order),
    /// then quarantined ones by the end of their quarantine, on `scheduler`'s clock. `nil` if the
    /// request is not for this group.
    func plan(for request: URLRequest, on scheduler: any Scheduler) -> [String]? {
        plan(for: request.url, on: scheduler, forgettingRecovered: false)?.origins
    }

    /// ``plan(for:on:)`` for a request to `url`, the request's own origin (`origin`, computed once
    /// per request), and, when
    /// `forgettingRecovered`, the origins whose quarantine has ended since they were last
    /// planned (they are forgotten, so each recovery is reported once).
    ///
    /// While no origin was ever quarantined (or every quarantine has been forgotten), the plan is
    /// ``origins`` as they are, without reading the clock, filtering or sorting.
    func plan(
        for url: URL?,
        on scheduler: any Scheduler,
        forgettingRecovered: Bool
    ) -> (origin: String, origins: [String], recovered: [String])? {
        guard let url, let origin = Self.origin(url), origins.contains(origin) else { return nil }
        if badUntil.withLock({ $0.isEmpty }) { return (origin, origins, []) }
        let now = scheduler.now
        var recovered: [String] = []
        let bad = badUntil.withLock { badUntil -> [String: Duration] in
            if forgettingRecovered {
                for (origin, until) in badUntil where until <= now {
                    badUntil[origin] = nil
                    recovered.append(origin)
                }
            }
            return badUntil
        }
        let recoveredInOrder = recovered.isEmpty ? [] : origins.filter(recovered.contains)
        // Every quarantine over: the preference order as it is.
        if bad.values.allSatisfy({ $0 <= now }) { return (origin, origins, recoveredInOrder) }
        let healthy = origins.filter { (bad[$0] ?? .zero) <= now }
        let sick = origins.filter { (bad[$0] ?? .zero) > now }.sorted { bad[$0]! < bad[$1]! }
        return (origin, healthy + sick, recoveredInOrder)
    }

    /// Marks `origin` bad for ``quarantine`` from now on `scheduler`'s clock.
    func markFailed(_ origin: String, on scheduler: any Scheduler) {
        let until = scheduler.now + quarantine
        badUntil.withLock { $0[origin] = until }
    }

    /// Whether `error` for a request with `method` moves it to the next origin.
    ///
    /// A TLS failure counts by the code Apple platforms give for it (``TLSFailure``), so a
    /// certificate libcurl reports as `.unknown` on Linux fails over as it does on Darwin.
    static func failsOver(_ error: URLError, method: String) -> Bool {
        switch TLSFailure.classified(error).code {
        case .cannotFindHost, .dnsLookupFailed, .cannotConnectToHost, .secureConnectionFailed,
             .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return true
        case .networkConnectionLost:
            return ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(method.uppercased())
        default:
            return false
        }
    }

    /// `request`, whose origin is `own` (as ``origin(_:)`` computed it), sent to `origin` instead.
    static func request(_ request: TransportRequest, at origin: String, from own: String) -> TransportRequest {
        // The common case, the request's own origin while it is healthy, is sent as it is.
        if origin == own { return request }
        guard let url = request.url, let target = URL(string: origin),
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return request }
        components.scheme = target.scheme
        components.host = target.host
        let defaultPort = target.scheme == "https" ? 443 : 80
        components.port = target.port == defaultPort ? nil : target.port
        var moved = request
        moved.url = components.url ?? url
        return moved
    }
}
