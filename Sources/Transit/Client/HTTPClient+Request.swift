import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPClient {
    /// Why a request Transit built cannot be sent, or `nil`: a URL that is not `http(s)` with a
    /// host (or that carries credentials), a method that is not a token, a header field name or
    /// value that is not valid. (It has no timeout or body stream of its own: those are a
    /// `URLRequest`'s, checked by ``validate(_:headers:)``.)
    static func validate(_ request: TransportRequest.Fields) -> URLRequestError? {
        guard let url = request.url else { return .invalidURL }
        if let error = check(url) { return error }
        if request.method != .get, !HTTPSyntax.isToken(request.method.rawValue) { return .invalidMethod(request.method.rawValue) }
        for field in request.headerFields {
            if let error = URLRequest.checkHeader(field.name, field.value) { return error }
        }
        return nil
    }

    /// `request` with `authorizer`'s credentials: its ``Authorizer/authorizationValue()`` written
    /// into the fields directly when it has one, else the request given to
    /// ``Authorizer/authorize(_:)`` as a `URLRequest`.
    ///
    /// The value is checked with the request's other fields, before anything is sent
    /// (``prepared(_:events:_:)``).
    ///
    /// - Throws: the authorizer's error, or ``URLRequestError/invalidURL`` for a request without
    ///   a URL.
    static func authorize(_ request: consuming TransportRequest, by authorizer: any Authorizer) throws -> TransportRequest {
        try authorize(request, by: authorizer, value: authorizer.authorizationValue())
    }

    /// ``authorize(_:by:)`` with the authoriser's ``Authorizer/authorizationValue()`` already read.
    static func authorize(_ request: consuming TransportRequest, by authorizer: any Authorizer, value: String?) throws -> TransportRequest {
        guard let value else {
            var authorized = consume request
            try authorized.changeURLRequest { $0 = try authorizer.authorize($0) }
            return authorized
        }
        guard request.url != nil else { throw URLRequestError.invalidURL }
        var authorized = consume request
        authorized.setValue(value, forHTTPHeaderField: "Authorization")
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
    /// The key of `request` (see ``key(method:url:headers:)``), its fields read as a `URLRequest`
    /// holds them.
    static func key(for request: TransportRequest) -> String? {
        if case .foundation(let urlRequest) = request.form { return key(for: urlRequest) }
        return key(method: request.method.rawValue, url: request.url, headers: TransportRequest.dictionary(of: request.headerFields))
    }
}
