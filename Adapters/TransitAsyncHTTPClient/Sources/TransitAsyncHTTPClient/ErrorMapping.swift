import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// AsyncHTTPClient's and NIO's errors as the `URLError`s `URLSessionTransport` gives for the same
/// failures (the table is in ``AsyncHTTPClientTransport``'s documentation). The original error is
/// kept under `NSUnderlyingErrorKey`.
enum ErrorMapping {
    static func urlError(_ error: any Error) -> URLError {
        if let error = error as? URLError { return error }
        return urlError(error, code: code(for: error))
    }

    /// `error` as a `URLError` with `code`.
    static func urlError(_ error: any Error, code: URLError.Code) -> URLError {
        URLError(code, userInfo: [
            NSUnderlyingErrorKey: error,
            NSLocalizedDescriptionKey: "\(description(for: code)) (\(error))",
        ])
    }

    static func code(for error: any Error) -> URLError.Code {
        switch error {
        case let error as HTTPClientError:
            return code(for: error)
        case let error as HTTPParserError:
            // NIO's decoder reports a body cut short by the end of the connection this way.
            return error == .invalidEOFState ? .networkConnectionLost : .cannotParseResponse
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.first { return connectCode(for: failure.error) }
            return error.dnsAError != nil || error.dnsAAAAError != nil ? .cannotFindHost : .cannotConnectToHost
        case is SocketAddressError, is SocketAddressError.UnknownHost:
            // The host name gave no address to connect to.
            return .cannotFindHost
        case let error as IOError:
            return code(errno: error.errnoCode, connecting: false)
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return .timedOut
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed: return .networkConnectionLost
            default: return .unknown
            }
        case let error as NIOSSLExtraError:
            // The certificate is for another host: Apple platforms call it untrusted.
            return error == .failedToValidateHostname ? .serverCertificateUntrusted : .secureConnectionFailed
        case let error as NIOSSLError:
            if case .handshakeFailed(let failure) = error, isCertificateRejection(failure) { return .serverCertificateUntrusted }
            return .secureConnectionFailed
        case let error as BoringSSLError:
            return isCertificateRejection(error) ? .serverCertificateUntrusted : .secureConnectionFailed
        default:
            return .unknown
        }
    }

    /// Whether BoringSSL failed the handshake because it did not trust the server's certificate
    /// (self-signed, issued by an unknown authority, expired, …): its error names
    /// `CERTIFICATE_VERIFY_FAILED`, without saying which check failed.
    static func isCertificateRejection(_ error: BoringSSLError) -> Bool {
        String(describing: error).contains("CERTIFICATE_VERIFY_FAILED")
    }

    private static func code(for error: HTTPClientError) -> URLError.Code {
        switch error {
        case .remoteConnectionClosed:
            return .networkConnectionLost
        case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout,
             .tlsHandshakeTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
            return .timedOut
        case .cancelled, .alreadyShutdown:
            return .cancelled
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            return .badURL
        default:
            return .unknown
        }
    }

    /// The code of a failed connection attempt.
    private static func connectCode(for error: any Error) -> URLError.Code {
        if let error = error as? IOError { return code(errno: error.errnoCode, connecting: true) }
        if case ChannelError.connectTimeout? = error as? ChannelError { return .timedOut }
        return .cannotConnectToHost
    }

    private static func code(errno: Int32, connecting: Bool) -> URLError.Code {
        switch errno {
        case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENETDOWN, EADDRNOTAVAIL: return .cannotConnectToHost
        case ETIMEDOUT: return .timedOut
        case ECONNRESET, EPIPE, ECONNABORTED, ENOTCONN, ESHUTDOWN: return connecting ? .cannotConnectToHost : .networkConnectionLost
        default: return connecting ? .cannotConnectToHost : .networkConnectionLost
        }
    }

    private static func description(for code: URLError.Code) -> String {
        switch code {
        case .cannotConnectToHost: "Could not connect to the server."
        case .cannotFindHost: "A server with the specified hostname could not be found."
        case .networkConnectionLost: "The network connection was lost."
        case .timedOut: "The request timed out."
        case .cannotParseResponse: "The server's reply is not a valid HTTP response."
        case .secureConnectionFailed: "A TLS error occurred and a secure connection to the server cannot be made."
        case .serverCertificateUntrusted: "The certificate for this server is invalid: it is not trusted, or it is for another host."
        case .serverCertificateHasBadDate: "The certificate for this server has expired."
        case .serverCertificateNotYetValid: "The certificate for this server is not yet valid."
        case .serverCertificateHasUnknownRoot: "The certificate for this server was signed by an unknown certifying authority."
        case .cancelled: "The request was cancelled."
        case .badURL: "The URL is not valid."
        default: "The request failed."
        }
    }
}
