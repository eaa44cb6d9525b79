import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client checks before it sends, and how it reports a transport failure.
extension HTTPClient {
    /// The first reason `request` must not be sent: it has no URL, its method is not a token, or
    /// one of its headers has a name that is not a token or a value with a control character.
    ///
    /// The fluent helpers refuse such input when it is given (they throw); this catches what was
    /// set by other means (`setValue(_:forHTTPHeaderField:)`, `httpMethod`, a default header).
    static func validate(_ request: URLRequest) -> URLRequestError? {
        validate(request, headers: request.allHTTPHeaderFields ?? [:])
    }

    /// ``validate(_:)`` with the request's header fields already read.
    static func validate(_ request: URLRequest, headers: [String: String]) -> URLRequestError? {
        guard request.url != nil else { return .invalidURL }
        if let method = request.httpMethod, !HTTPSyntax.isToken(method) { return .invalidMethod(method) }
        for (field, value) in headers {
            if let error = URLRequest.checkHeader(field, value) { return error }
        }
        return nil
    }

    /// The failure of the transport for `request`, as a ``TransportError`` carrying the request
    /// as it was sent. An error that already is one passes through unchanged. A TLS failure gets
    /// the code Apple platforms give for it (``TLSFailure``), whatever the transport.
    ///
    /// `events`, the client's monitors, travels with the error so that a retry further down the
    /// chain can report to them.
    static func annotate(_ error: any Error, sentWith request: URLRequest, events: HTTPEventSink? = nil) -> any Error {
        if error is TransportError { return error }
        var annotated = TransportError(request: request, underlying: TLSFailure.classified(error))
        annotated.eventSink = events
        return annotated
    }
}
