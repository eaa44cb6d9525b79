import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A user name and password sent as `Authorization: Basic …` (RFC 7617, UTF-8) to the hosts of a
/// scope: the ``Authorizer`` for a service that takes the same credentials on every request.
///
/// ```swift
/// let credentials = try BasicCredentials(
///     username: "alice", password: password,
///     scope: CredentialScope(hosts: ["api.example.com"])
/// )
/// let client = HTTPClient { $0.authorizer = credentials }
/// ```
///
/// Guarantees:
/// - **Only where they belong.** The header is added to requests in ``scope`` (named hosts, over
///   `https` unless the scope allows `http`), and to no other. A redirect to another origin drops
///   it and it is not added back on later hops (``RedirectPolicy``); a redirect whose `Location`
///   carries credentials of its own is refused.
/// - **Checked once, at creation.** A user name with `:` or a control character, or a password
///   with a control character, is refused by the initializer (RFC 7617 §2), so
///   ``authorize(_:)`` never fails for them.
/// - **A 401 is the answer, once.** Static credentials cannot be renewed:
///   ``renewCredentials(after:scheduler:)`` finishes without a value, so the client delivers the
///   `401 Unauthorized` as the response after one attempt — never replayed with the same
///   credentials — and `catchHTTPErrors()` fails it with
///   ``HTTPClientError/unauthorized(response:)`` (its `WWW-Authenticate` header and body at
///   hand), as it would without an authoriser. The client's monitors see
///   ``HTTPEvent/Kind/credentialRenewalDeclined``.
/// - **Never printed.** `description`, `debugPrint` (which shows the description) and `dump`
///   show the user name and the scope, never the password or the header value; the header is
///   redacted wherever Transit prints a request (``Redaction``).
///
/// Thread safety: an immutable value; use it from any thread.
public struct BasicCredentials: Authorizer, CustomStringConvertible, CustomReflectable, RedactedReflection {
    /// The user name sent.
    let username: String
    /// Where the credentials may go; a request outside it is sent without them.
    public let scope: CredentialScope
    /// `Basic <base64>`, computed once (it holds the password: never printed).
    private let header: String

    /// Credentials for the hosts of `scope`.
    ///
    /// - Throws: ``URLRequestError/colonInBasicUsername``,
    ///   ``URLRequestError/controlCharacterInBasicUsername`` or
    ///   ``URLRequestError/controlCharacterInBasicPassword`` for credentials RFC 7617 §2 forbids.
    ///   The error holds neither the user name nor the password.
    public init(username: String, password: String, scope: CredentialScope) throws {
        header = try URLRequest.basicAuthorization(username: username, password: password)
        self.username = username
        self.scope = scope
    }

    /// `request` with `Authorization: Basic …`, replacing any `Authorization` header, when its URL
    /// is in ``scope``; any other request is returned unchanged (so the method can also be a
    /// request modifier without sending the credentials elsewhere).
    ///
    /// - Throws: ``URLRequestError/invalidURL`` for a request without a URL.
    public func authorize(_ request: URLRequest) throws -> URLRequest {
        guard let url = request.url else { throw URLRequestError.invalidURL }
        guard scope.allows(url) else { return request }
        var request = request
        request.setCheckedHeader(header, canonicalName: "Authorization")
        return request
    }

    /// `Basic <base64 of user name:password>`, which the client sets on each request in
    /// ``scope``.
    public func authorizationValue() throws -> String? {
        header
    }

    /// Finishes at once without a value: static credentials cannot be renewed, so the client
    /// delivers the 401 as the response instead of sending the request again with the same
    /// credentials.
    public func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> {
        .empty
    }

    /// `BasicCredentials(username: "alice", password: <redacted>, hosts: [...])`.
    public var description: String {
        let hosts = scope.hosts.sorted().map(\.debugDescription).joined(separator: ", ")
        return "BasicCredentials(username: \(username.debugDescription), password: <redacted>, hosts: [\(hosts)], "
            + "insecureHTTP: \(scope.insecureHTTP))"
    }
}
