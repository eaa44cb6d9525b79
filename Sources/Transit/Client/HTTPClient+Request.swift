import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPClient {
    /// Why `request` cannot be sent, or `nil`: a URL that is not `http(s)` with a host (or that
    /// carries credentials), a method that is not a token, a header field name or value that is
    /// not valid, a body stream, a timeout that is not a positive number of seconds.
    static func validate(_ request: TransportRequest.Fields) -> URLRequestError? {
        guard let url = request.url else { return .invalidURL }
        if let error = check(url) { return error }
        if request.method != .get, !HTTPSyntax.isToken(request.method.rawValue) { return .invalidMethod(request.method.rawValue) }
        for field in request.headerFields {
            if let error = URLRequest.checkHeader(field.name, field.value) { return error }
        }
        return nil
    }

    /// `request` with `authorizer`'s credentials. A ``TokenStore`` writes its header into the
    /// fields directly; any other authorizer is given the request as a `URLRequest`.
    static func authorize(_ request: consuming TransportRequest, by authorizer: any Authorizer) throws -> TransportRequest {
        guard let store = authorizer as? TokenStore else {
            var authorized = consume request
            try authorized.changeURLRequest { $0 = try authorizer.authorize($0) }
            return authorized
        }
        return try authorize(request, with: store.credential)
    }

    /// `request` with `credential`'s `Authorization` header, replacing any.
    ///
    /// - Throws: ``URLRequestError/invalidBearerToken`` when the token cannot be a header value,
    ///   ``URLRequestError/invalidURL`` for a request without a URL.
    static func authorize(_ request: consuming TransportRequest, with credential: BearerCredential) throws -> TransportRequest {
        guard let header = credential.header else { throw URLRequestError.invalidBearerToken }
        guard request.url != nil else { throw URLRequestError.invalidURL }
        var authorized = consume request
        authorized.setValue(header, forHTTPHeaderField: "Authorization")
        return authorized
    }
}

extension RequestKey {
    /// The key of `request`: a built-in key reads its URL, a custom one is given it as a
    /// `URLRequest`.
    func key(for request: TransportRequest) -> String {
        switch builtIn {
        case .originAndFirstSegment?: request.url.map(URLOrigin.key) ?? ""
        case .origin?: request.url.map(URLOrigin.origin) ?? ""
        case nil: key(request.urlRequest)
        }
    }
}

extension Coalescer {
    /// The key under which identical requests in flight share one exchange: method, URL and
    /// header fields (names in any case, in any order); `nil` for a method other than GET and
    /// HEAD, which is never shared.
    static func key(for request: TransportRequest) -> String? {
        if case .foundation(let urlRequest) = request.form { return key(for: urlRequest) }
        let method = request.method.rawValue
        guard method == "GET" || method == "HEAD", let url = request.url?.absoluteString else { return nil }
        let headers = TransportRequest.dictionary(of: request.headerFields)
            .map { "\($0.key.lowercased()):\($0.value)" }
            .sorted()
            .joined(separator: "\n")
        return "\(method) \(url)\n\(headers)"
    }
}
