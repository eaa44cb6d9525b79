import Foundation

/// The credentials of one signed-in user: an access token, and what it takes to renew it.
///
/// `Codable` with the keys `accessToken`, `refreshToken` and `expiresAt`, so it can be decoded
/// from a token endpoint that uses them, or kept in a keychain. It prints without its tokens.
public struct AuthToken: Sendable, Hashable, Codable {
    /// The token sent as `Authorization: Bearer <accessToken>`.
    public var accessToken: String
    /// The token the refresh closure trades for a new access token, if the server issued one.
    public var refreshToken: String?
    /// When the access token expires, if the server said so. Informational: Transit refreshes on
    /// 401, never by reading a clock (time only comes from schedulers); compare it with the
    /// time you trust (`token.expiresAt.map { $0 <= now } ?? false`).
    public var expiresAt: Date?

    /// Creates credentials.
    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// `true` if ``expiresAt`` is known and not after `date`.
    func isExpired(at date: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= date
    }
}

/// An `AuthToken` prints without its tokens: `print`, string interpolation, `debugPrint` (which
/// shows the ``description``) and `dump` show whether each token is there and its expiry, never
/// a token's value.
extension AuthToken: CustomStringConvertible, CustomReflectable, RedactedReflection {
    /// `AuthToken(accessToken: <redacted>, refreshToken: <redacted>, expiresAt: …)`.
    public var description: String {
        let refresh = refreshToken == nil ? "nil" : "<redacted>"
        let expiry = expiresAt.map { "\($0)" } ?? "nil"
        return "AuthToken(accessToken: <redacted>, refreshToken: \(refresh), expiresAt: \(expiry))"
    }
}
