import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An attempt that failed in the transport: no HTTP response arrived (the connection was refused
/// or lost, the request timed out, …). ``HTTPClient`` fails a request's signal with it, so the
/// request that was sent — and its method — are at hand without reading `userInfo`.
///
/// ```swift
/// api.get(endpoint: "posts").sink(receiveCompletion: { completion in
///     if case .failure(let error as TransportError) = completion, error.urlError?.code == .timedOut {
///         print("\(error.request.httpMethod ?? "GET") timed out")      // GET timed out
///     }
/// }, receiveValue: { _ in })
/// ```
///
/// - ``request`` is the attempt as it was handed to the transport (every modifier and default
///   header applied), so a retry policy can tell a GET, which is safe to send again, from a POST.
/// - ``underlying`` is what the transport failed with, unchanged (usually a `URLError`);
///   ``urlError`` reads it as a `URLError` (its `code` says what failed).
/// - The description, `localizedDescription` and the reflection (`dump`) never show credentials:
///   the URL is redacted (no user-info, no secret query values) and no header is printed (see
///   ``Redaction``).
///
/// A transport used without a client (`transport.send(request)`) fails with its own errors,
/// unwrapped. ``RetryPolicy`` understands both.
public struct TransportError: Error, Sendable, CustomStringConvertible, LocalizedError, DescribedError, CustomReflectable, RedactedReflection {
    /// The request as it was sent for the attempt that failed, as Transit carries it (its
    /// ``TransportRequest/method`` and ``TransportRequest/url`` read without a `URLRequest`).
    public var transportRequest: TransportRequest { TransportRequest(form: sentForm) }
    /// What the request is made of: one reference, so that an error passed down a chain copies
    /// no more than a `URLRequest` would. (Its body file and progress are not kept.)
    private let sentForm: TransportRequest.Form
    /// The request as it was sent for the attempt that failed, as a Foundation `URLRequest` (made
    /// when read, for a request Transit built).
    public var request: URLRequest { transportRequest.urlRequest }
    /// The error the transport failed with.
    public let underlying: any Error
    /// What it takes to continue the download this attempt was writing, when it was interrupted
    /// mid-body and the response allowed a byte-range resume (see ``DownloadResumeData``); `nil`
    /// for every other failure.
    public internal(set) var resumeData: DownloadResumeData?

    /// The failure of the transport for `request`, as a ``TransportError`` carrying the request
    /// as it was sent. An error that already is one passes through unchanged. A TLS failure gets
    /// the code Apple platforms give for it (``TLSFailure``), whatever the transport.
    static func annotating(_ error: any Error, sentWith request: TransportRequest) -> any Error {
        if error is TransportError { return error }
        return TransportError(request: request, underlying: TLSFailure.classified(error))
    }

    /// Wraps `underlying`, the failure of the attempt that sent `request`.
    init(request: TransportRequest, underlying: any Error) {
        sentForm = request.form
        self.underlying = underlying
    }

    /// Wraps `underlying`, the failure of the attempt that sent `request`.
    init(request: URLRequest, underlying: any Error) {
        self.init(request: TransportRequest(request), underlying: underlying)
    }

    /// The underlying error as a `URLError`, if it is one.
    public var urlError: URLError? {
        underlying as? URLError
    }

    /// The `URLError` code of the underlying error (`.timedOut`, `.cannotConnectToHost`, …), if it
    /// is a `URLError`: `urlError?.code`.
    package var code: URLError.Code? {
        urlError?.code
    }

    /// The method of the request that failed (GET when the request names none).
    package var method: HTTPMethod {
        transportRequest.method
    }

    /// `<METHOD> <redacted URL> failed in the transport: <what failed>`, such as
    /// `GET https://api.example.com/v1/posts?token=REDACTED failed in the transport: timed out
    /// (URLError -1001)`.
    public var description: String {
        "\(method) \(redactedURL) failed in the transport: \(reason)"
    }

    private var redactedURL: String {
        transportRequest.url?.redactedForLogging ?? "<no URL>"
    }

    /// The underlying failure in words, with any URL it quotes redacted.
    private var reason: String {
        guard let urlError else {
            return Redaction.redactingURLs(in: String(describing: underlying))
        }
        let name = Self.name(of: urlError.code)
        let code = "URLError \(urlError.code.rawValue)"
        if let message = urlError.userInfo[NSLocalizedDescriptionKey] as? String, !message.isEmpty {
            return "\(name) (\(code)): \(Redaction.redactingURLs(in: message))"
        }
        return "\(name) (\(code))"
    }

    /// A few words for the codes a transport commonly fails with.
    private static func name(of code: URLError.Code) -> String {
        switch code {
        case .timedOut: return "timed out"
        case .cannotConnectToHost: return "cannot connect to host"
        case .networkConnectionLost: return "network connection lost"
        case .notConnectedToInternet: return "not connected to the internet"
        case .cannotFindHost: return "cannot find host"
        case .dnsLookupFailed: return "DNS lookup failed"
        case .cancelled: return "cancelled"
        case .badURL: return "bad URL"
        case .unsupportedURL: return "unsupported URL"
        case .badServerResponse: return "bad server response"
        case .cannotParseResponse: return "cannot parse response"
        case .secureConnectionFailed: return "secure connection failed"
        case .serverCertificateUntrusted: return "server certificate untrusted"
        case .serverCertificateHasBadDate: return "server certificate has bad date"
        case .serverCertificateNotYetValid: return "server certificate not yet valid"
        case .serverCertificateHasUnknownRoot: return "server certificate has unknown root"
        case .cannotDecodeContentData: return "cannot decode content data"
        case .httpTooManyRedirects: return "too many redirects"
        case .resourceUnavailable: return "resource unavailable"
        case .dataLengthExceedsMaximum: return "data length exceeds maximum"
        case .userAuthenticationRequired: return "user authentication required"
        default: return "failed"
        }
    }
}
