import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``AuthToken`` as it is written into a request: `Authorization: Bearer <access token>`,
/// made once per token (not per request) and checked like any header value.
struct BearerCredential: Sendable {
    /// The credentials.
    let token: AuthToken
    /// `Bearer <access token>`, or `nil` if the access token cannot be a header value.
    let header: String?

    /// The credential of `token`. Its header is `nil` for an empty access token or one with a
    /// space, a control character or DEL (a token read from a file with its newline would
    /// otherwise be dropped by Linux Foundation, and the request sent without it).
    init(_ token: AuthToken) {
        self.token = token
        header = HTTPSyntax.isBearerToken(token.accessToken) ? "Bearer \(token.accessToken)" : nil
    }

    /// `request` with `Authorization: Bearer <access token>`, replacing any `Authorization`.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` when the token cannot be a header value,
    ///   ``URLRequestError/invalidURL`` for a request without a URL.
    func authorize(_ request: URLRequest) throws -> URLRequest {
        guard let header else { throw URLRequestError.invalidBearerToken }
        guard request.url != nil else { throw URLRequestError.invalidURL }
        var request = request
        request.setCheckedHeader(header, canonicalName: "Authorization")
        return request
    }

    /// The bearer token in `request`'s `Authorization` header (scheme matched case-insensitively,
    /// surrounding spaces ignored), or `nil` if it has none.
    static func token(in request: URLRequest?) -> String? {
        guard let value = request?.value(forHTTPHeaderField: "Authorization") else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        return String(trimmed.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }
}
