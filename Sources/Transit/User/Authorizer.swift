import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Where an authorizer's credentials may go: named hosts, over https.
///
/// Credentials are added only to requests whose host is one of ``hosts`` (exactly, or a
/// subdomain for an entry written `*.example.com`) and whose scheme is `https` — or `http` when
/// ``insecureHTTP`` allows it (loopback only, for tests and development, unless you say
/// otherwise).
public struct CredentialScope: Sendable, Hashable {
    /// When credentials may travel over plain `http`.
    public enum InsecureHTTP: Sendable, Hashable {
        /// Never (the default).
        case refused
        /// To loopback hosts only (`127.0.0.0/8`, `::1`, `localhost`): for tests and development.
        case loopbackOnly
        /// To every host of the scope. Credentials can then be read by anyone on the path.
        case allowed
    }

    /// The hosts, lowercased; `*.example.com` matches every subdomain of `example.com`.
    public let hosts: Set<String>
    /// When plain `http` is allowed.
    public let insecureHTTP: InsecureHTTP

    /// Creates a scope.
    public init(hosts: Set<String>, insecureHTTP: InsecureHTTP = .refused) {
        self.hosts = Set(hosts.map { $0.lowercased() })
        self.insecureHTTP = insecureHTTP
    }

    /// Whether credentials may be sent to `url`.
    public func allows(_ url: URL) -> Bool {
        // A plain URL's scheme and host are read in one scan of its bytes (every request in a
        // client with an authoriser asks); Foundation reads any other.
        let parts = URLOrigin.plainSchemeAndHost(url) ?? url.scheme.flatMap { scheme in
            url.host.map { (scheme.lowercased(), $0.lowercased()) }
        }
        guard let (scheme, host) = parts, !host.isEmpty else { return false }
        let named = hosts.contains(host) || hosts.contains { entry in
            entry.hasPrefix("*.") && host.hasSuffix(entry.dropFirst(1)) && host.count > entry.count - 1
        }
        guard named else { return false }
        switch scheme {
        case "https": return true
        case "http":
            switch insecureHTTP {
            case .refused: return false
            case .allowed: return true
            case .loopbackOnly: return Self.isLoopback(host)
            }
        default: return false
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        var host = host
        return host.withUTF8(isLoopback)
    }

    /// ``isLoopback(_:)`` of a host's UTF-8 bytes (read as bytes: this runs for every request
    /// the authoriser sees).
    private static func isLoopback(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var bare = bytes[...]
        if bare.first == UInt8(ascii: "["), bare.last == UInt8(ascii: "]") { bare = bare.dropFirst().dropLast() }
        if bare.elementsEqual("localhost".utf8) || bare.elementsEqual("::1".utf8) { return true }
        // 127.x.y.z: four decimal octets of at most 255, the first 127.
        var octets = 0
        var value = 0
        var digits = 0
        var first = -1
        for byte in bare {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                if first < 0 { first = value }
                octets += 1
                value = 0
                digits = 0
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return false }
            } else {
                return false
            }
        }
        return digits > 0 && octets == 3 && first == 127
    }
}

/// User-level credentials for an ``HTTPClient``: one object that both adds credentials to every
/// request in its ``scope`` and recovers from `401 Unauthorized` by renewing them and sending the
/// request once more (`HTTPClient(authorizer:)`), instead of a modifier and an operator written
/// into every chain. ``TokenStore`` is one.
public protocol Authorizer: Sendable {
    /// Where the credentials may go; a request outside it is sent without them.
    var scope: CredentialScope { get }
    /// `request` with the current credentials added. Throws (and nothing is sent) when they are
    /// not valid header values.
    func authorize(_ request: URLRequest) throws -> URLRequest
    /// A signal that sends one value once credentials newer than those `rejected` carried are
    /// available (renewing them if needed, shared with concurrent callers), or fails with the
    /// renewal's error.
    func renewCredentials(after rejected: URLRequest) -> Signal<Void, any Error>
    /// Called when a request's subscription starts: the function that renews the credentials
    /// if that request is answered 401. The default calls ``renewCredentials(after:)``; an
    /// authorizer that must know whether the request is part of its own renewal (to fail a
    /// renewal that waits for itself) captures that here.
    func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error>
}

extension Authorizer {
    public func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        { rejected in self.renewCredentials(after: rejected) }
    }
}

extension TokenStore: Authorizer {
    /// The hosts this store's tokens may go to. A store created without a scope authorises
    /// nothing through a client: name its hosts with `init(token:scope:…)`.
    public var scope: CredentialScope {
        credentialScope ?? CredentialScope(hosts: [])
    }

    public func renewCredentials(after rejected: URLRequest) -> Signal<Void, any Error> {
        freshToken(replacing: TokenStore.bearerToken(in: rejected)).map { _ in () }
    }

    /// A renewal that knows whether the request being subscribed is part of one of this store's
    /// refreshes: such a request answered 401 fails the refresh with
    /// ``RefreshError/reentrantRefresh`` instead of waiting for itself.
    public func renewal() -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        renewal(events: nil)
    }

    /// ``renewal()``, with the refresh reported to `events` (the client's monitors).
    func renewal(events: HTTPEventSink?) -> @Sendable (_ rejected: URLRequest) -> Signal<Void, any Error> {
        let ownRefresh = refreshBeingSubscribed
        return { [self] rejected in
            freshToken(replacing: TokenStore.bearerToken(in: rejected), fromRefresh: ownRefresh, events: events).map { _ in () }
        }
    }
}

extension HTTPClient {
    /// `attempt` for `request` with the authorizer's credentials added on every subscription
    /// (when the request is in its scope), and, on a 401 to credentials the authorizer added,
    /// one renewal and one more attempt.
    ///
    /// A ``TokenStore``'s refreshes are reported to `events` (the client's monitors) by the
    /// store; another authorizer's renewal is reported here
    /// (``HTTPEvent/Kind/authorizerRenewalStarted`` and how it ended).
    static func authorized(
        _ request: URLRequest,
        by authorizer: any Authorizer,
        events: HTTPEventSink?,
        attempt: @escaping @Sendable (consuming URLRequest) -> Signal<HTTPResponse, any Error>
    ) -> Signal<HTTPResponse, any Error> {
        guard let url = request.url, authorizer.scope.allows(url) else { return attempt(request) }
        // Only a client with monitors asks whether the authorizer is a store: a store reports its
        // own refreshes, another authorizer's renewal is reported here.
        let store = events == nil ? nil : authorizer as? TokenStore
        let report = store == nil ? events : nil
        // One stage rather than `deferred` and two `flatMap`s: every request in the scope passes
        // through it, and the renewal path is the rare one.
        return Signal { observer in
            // At subscription, so a request made by a renewal is known as such.
            let renew = if let events, let store {
                store.renewal(events: events)
            } else {
                authorizer.renewal()
            }
            let scope = CancellationToken()
            // Set (from the first attempt's serialised events) once its 401 starts the renewal:
            // the first attempt's completion is then not the signal's.
            let renewing = Locked(false)
            sendAuthorized(request, by: authorizer, attempt: attempt).observe(Observer { event in
                guard case .value(let response) = event, response.statusCode == 401 else {
                    if !renewing.withLock({ $0 }) { observer.send(event) }
                    return
                }
                renewing.withLock { $0 = true }
                let waiting = scope.makeChild()
                let rejected = response.request
                report?.emit(.authorizerRenewalStarted, request: rejected)
                renew(rejected).observe(Observer { renewal in
                    switch renewal {
                    case .value:
                        report?.emit(.authorizerRenewalEnded(renewed: true), request: rejected)
                        // Stop waiting (releases this waiter), then send the request again, once.
                        waiting.cancel()
                        sendAuthorized(request, by: authorizer, attempt: attempt).observe(observer, in: scope)
                    case .failed(let error):
                        report?.emit(.authorizerRenewalFailed(error), request: rejected)
                        observer.fail(error)
                    case .finished:
                        report?.emit(.authorizerRenewalEnded(renewed: false), request: rejected)
                        // A renewal that ends without renewing: the 401 is the answer.
                        observer.send(.value(response))
                        observer.finish()
                    }
                }, in: waiting)
            }, in: scope)
            return { scope.cancel() }
        }
    }

    /// `attempt` for `request` with the authorizer's credentials added now; fails with the
    /// authorizer's error if it cannot add them.
    private static func sendAuthorized(
        _ request: URLRequest,
        by authorizer: any Authorizer,
        attempt: (consuming URLRequest) -> Signal<HTTPResponse, any Error>
    ) -> Signal<HTTPResponse, any Error> {
        do {
            return attempt(try authorizer.authorize(request))
        } catch {
            return Signal(error: error)
        }
    }
}
