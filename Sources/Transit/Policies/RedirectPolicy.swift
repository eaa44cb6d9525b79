import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which redirects an ``HTTPClient`` follows.
///
/// Transports never follow redirects themselves (see ``HTTPTransport``); the client does, by this
/// policy, so the rules are the same on every transport. Whatever the policy:
/// - a redirect from `https` to `http` is refused with ``RedirectError/insecureRedirect(from:to:)``
///   (it would send the rest of the exchange in the clear);
/// - a redirect whose `Location` carries user-info (`https://user:password@host/…`) is refused
///   with ``RedirectError/credentialsInLocation(status:to:)``: it asks the client to send
///   credentials the user never gave (one transport would send them as Basic, another would drop
///   them), and the client refuses user-info in every URL it sends;
/// - a redirect that changes scheme, host or port drops every header ``Redaction`` treats as
///   secret (`Authorization`, `Proxy-Authorization`, `Cookie`, `X-API-Key`, `X-Auth-Token`, any
///   name ending in `-Token`, `-Key`, `-Secret`, …: see ``Redaction``) and
///   every header the client adds to them (``HTTPClient/Configuration/sensitiveHeaders``), and they are not
///   added back on later hops;
/// - `303 See Other`, and `301`/`302` answering a `POST`, continue as `GET` without the body;
///   `307` and `308` repeat the method and the body;
/// - at most 10 hops (another limit with ``limited(to:)``), then
///   ``RedirectError/tooManyRedirects(_:)``.
public struct RedirectPolicy: Sendable, Hashable {
    /// What the client does with a redirect.
    enum Mode: Sendable, Hashable {
        /// Follow redirects to any origin (the default), dropping credentials across origins.
        case follow
        /// Follow redirects within the same origin (scheme, host and port); a redirect to another
        /// origin is delivered as the response, unfollowed.
        case sameOrigin
        /// Follow nothing: every 3xx is delivered as the response.
        case never
    }

    /// What the client does with a redirect.
    var mode: Mode
    /// The most hops one request follows.
    var maxRedirects: Int

    /// A policy: `mode` for every redirect, at most `maxRedirects` hops (a negative value counts
    /// as zero).
    init(_ mode: Mode, maxRedirects: Int = 10) {
        self.mode = mode
        self.maxRedirects = max(0, maxRedirects)
    }

    /// This policy, following at most `maxRedirects` hops (a negative value counts as zero):
    /// `RedirectPolicy.follow.limited(to: 3)`.
    public func limited(to maxRedirects: Int) -> RedirectPolicy {
        RedirectPolicy(mode, maxRedirects: maxRedirects)
    }

    /// Follow redirects to any origin, at most 10 hops, dropping credentials across origins.
    public static let follow = RedirectPolicy(.follow)
    /// Follow redirects within the request's origin only.
    public static let sameOrigin = RedirectPolicy(.sameOrigin)
    /// Deliver every 3xx as the response.
    public static let never = RedirectPolicy(.never)

    /// Whether the header `field` is dropped from a request redirected to another origin: it is
    /// one ``Redaction`` treats as secret (`Authorization`, `Proxy-Authorization`, `Cookie` and
    /// every name that looks secret), or one of `sensitiveHeaders` (lowercased names, the
    /// client's additions): ``Redaction/isSecretHeader(_:additional:)``. One list decides what is
    /// redacted, what stays with its origin and what partitions the HTTP cache.
    package static func dropsAcrossOrigins(_ field: String, sensitiveHeaders: Set<String>) -> Bool {
        Redaction.isSecretHeader(field, additional: sensitiveHeaders)
    }
}

/// A redirect the client refused to follow.
public enum RedirectError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The request was redirected more times than its policy allows (``RedirectPolicy/limited(to:)``).
    case tooManyRedirects(Int)
    /// A redirect from `https` to `http`. The URLs are given without user info, query or
    /// fragment.
    case insecureRedirect(from: String, to: String)
    /// A redirect whose `Location` is not a URL, or not `http`/`https`. (A 3xx without a
    /// `Location` is delivered as the response.)
    case invalidLocation(status: Int)
    /// A redirect whose `Location` carries user-info (`https://user:password@host/…`), answered
    /// with `status`. It is not followed, to any origin: the server asks the client to send
    /// credentials the user never gave, and transports treat them differently (URLSession sends
    /// them as Basic, AsyncHTTPClient drops them). `to` is the Location's origin
    /// (`scheme://host:port`), without the user-info, path or query.
    case credentialsInLocation(status: Int, to: String)

    public var description: String {
        switch self {
        case .tooManyRedirects(let count):
            return "The request was redirected more than \(count) times; the server is probably looping. "
                + "Allow more with RedirectPolicy.follow.limited(to:) if the chain is expected."
        case .insecureRedirect(let from, let to):
            return "Refused a redirect from \(from) to \(to): it downgrades https to http, which would send the "
                + "request (and anything secret in it) unencrypted."
        case .invalidLocation(let status):
            return "The server answered \(status) with a Location that is not an http(s) URL; "
                + "the redirect cannot be followed."
        case .credentialsInLocation(let status, let to):
            return "Refused a redirect (\(status)) to \(to): its Location carries user-info (a user name or password "
                + "before '@'), credentials the client was not given. Send credentials with an authoriser or an "
                + "Authorization header; ask the server's owner to redirect without them."
        }
    }
}

extension RedirectPolicy {
    /// The statuses that redirect.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// What to do with a response `head` to `request` after `hops` redirects: `nil` to deliver it,
    /// the next request to follow it, or an error.
    func next(
        after head: HTTPResponseHead,
        to request: TransportRequest,
        hops: Int,
        sensitiveHeaders: Set<String>
    ) -> Result<TransportRequest, RedirectError>? {
        let status = head.statusCode
        guard mode != .never, Self.redirectStatuses.contains(status), let current = request.url else {
            return nil
        }
        // A 3xx without a Location has nowhere to go: it is the response (RFC 9110 §15.4).
        guard let location = head.value(forHTTPHeaderField: "Location") else { return nil }
        // `URLComponents` must read the target too: relative to a URL without a scheme,
        // Foundation resolves some Locations to URLs it refuses when parsing them afresh
        // (`HTTPS://host:p`, a port that is no number), whose origin cannot be known.
        guard let target = URL(string: location, relativeTo: current)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
              target.host?.isEmpty == false,
              let components = URLComponents(url: target, resolvingAgainstBaseURL: false)
        else { return .failure(.invalidLocation(status: status)) }
        let crossOrigin = !Self.sameOrigin(current, target)
        if crossOrigin, mode == .sameOrigin { return nil }
        if current.scheme?.lowercased() == "https", scheme == "http" {
            return .failure(.insecureRedirect(from: Self.origin(current), to: Self.origin(target)))
        }
        // User-info as Foundation reads it either way (`URL` and `URLComponents`); the client
        // refuses it in every URL it is given, and a redirect is no exception.
        if target.user != nil || target.password != nil || components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            return .failure(.credentialsInLocation(status: status, to: Self.origin(target)))
        }
        guard hops < maxRedirects else { return .failure(.tooManyRedirects(maxRedirects)) }

        var next = request
        next.url = Self.inheritingFragment(target, components, from: current)
        let method = request.method.rawValue.uppercased()
        if status == 303 && method != "HEAD" || (status == 301 || status == 302) && method == "POST" {
            next.method = .get
            next.body = nil
            next.bodyFile = nil
            for field in ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"] {
                next.setValue(nil, forHTTPHeaderField: field)
            }
        }
        if crossOrigin {
            let added = Set(sensitiveHeaders.map { $0.lowercased() })
            for field in next.headerFields.map(\.name) where Self.dropsAcrossOrigins(field, sensitiveHeaders: added) {
                next.setValue(nil, forHTTPHeaderField: field)
            }
        }
        return .success(next)
    }

    /// Whether `a` and `b` have the same scheme, host and (effective) port.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }

    /// `scheme://host:port`, for messages: no user info, path or query.
    static func origin(_ url: URL) -> String {
        let port = url.port.map { ":\($0)" } ?? ""
        return "\(url.scheme ?? "?")://\(url.host ?? "?")\(port)"
    }

    /// RFC 9110 §10.2.2: a `Location` without a fragment inherits the original one, byte for
    /// byte (`URL.fragment` is percent-encoded, so it goes to `percentEncodedFragment`).
    private static func inheritingFragment(_ target: URL, _ components: URLComponents, from current: URL) -> URL {
        guard target.fragment == nil, let fragment = current.fragment else { return target }
        var components = components
        components.percentEncodedFragment = fragment
        return components.url ?? target
    }
}
