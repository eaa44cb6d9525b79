import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Transit

/// What the metrics, spans and logs of one request are labelled with, read once from its first
/// event: OpenTelemetry's HTTP client attributes of bounded cardinality (no path, no query) and
/// the request's operation name.
struct RequestAttributes: Sendable {
    /// `http.request.method`.
    let method: String
    /// `server.address`: the host.
    let address: String
    /// `server.port`: the port, explicit or the scheme's default.
    let port: Int
    /// `url.scheme`.
    let scheme: String
    /// The request's ``RequestOptions/operationName``, or `""`.
    let operation: String
    /// `url.full`, redacted by Transit's ``Redaction`` (no user-info, no secret query value):
    /// for spans and logs only, never a metric dimension.
    let redactedURL: String
    /// The URL they were read from (not a dimension).
    let url: URL?

    init(_ request: TransportRequest?, operation: String?) {
        method = request?.method.rawValue ?? "GET"
        let url = request?.url
        self.url = url
        scheme = url?.scheme?.lowercased() ?? ""
        address = url?.host ?? ""
        port = url?.port ?? (scheme == "http" ? 80 : 443)
        self.operation = operation ?? ""
        redactedURL = url?.redactedForLogging ?? ""
    }

    /// The metric dimensions every metric of the request has, with `extra` after them.
    func dimensions(_ extra: (String, String)...) -> [(String, String)] {
        var dimensions = [
            ("http.request.method", method), ("server.address", address), ("server.port", String(port)), ("url.scheme", scheme),
        ]
        if !operation.isEmpty { dimensions.append(("operation", operation)) }
        dimensions += extra
        return dimensions
    }
}

/// OpenTelemetry's `error.type` of a failure: the status code of an HTTP error, the code of a
/// `URLError` (inside a ``TransportError`` or not), else the error's type name. Never a message,
/// a URL or a value from the request.
func errorType(_ error: any Error) -> String {
    if let httpError = error as? any HTTPError { return String(httpError.statusCode) }
    if let urlError = (error as? TransportError)?.urlError ?? (error as? URLError) { return "URLError.\(urlError.code.rawValue)" }
    if let transportError = error as? TransportError { return String(describing: type(of: transportError.underlying)) }
    return String(describing: type(of: error))
}

/// A failure in words, safe to log: an HTTP error by its status only (never its body), anything
/// else by its description with every URL redacted.
func describe(_ error: any Error) -> String {
    if let httpError = error as? any HTTPError { return "HTTP \(httpError.statusCode)" }
    return Redaction.redactingURLs(in: String(describing: error))
}
