import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// TLS failures with the `URLError` codes Apple platforms give, whatever the transport.
///
/// On Apple platforms `URLSession` reports a certificate it does not trust as
/// `.serverCertificateUntrusted` (self-signed, issued by an unknown authority, for another host),
/// `.serverCertificateHasUnknownRoot`, `.serverCertificateHasBadDate` (expired) or
/// `.serverCertificateNotYetValid`, and any other failed handshake as `.secureConnectionFailed`.
/// Linux Foundation (libcurl) reports most of these as `.unknown`, with libcurl's message as the
/// description ("SSL certificate problem: self-signed certificate"). ``classified(_:)`` reads that
/// message and gives the failure the code Apple gives, so retry policies, ``HostFailover`` and
/// callers see one code for one failure on every platform:
///
/// | libcurl's message                                                      | code                               |
/// |------------------------------------------------------------------------|------------------------------------|
/// | `certificate has expired`                                              | `.serverCertificateHasBadDate`     |
/// | `certificate is not yet valid`                                         | `.serverCertificateNotYetValid`    |
/// | `self-signed certificate in certificate chain` (an untrusted root)     | `.serverCertificateHasUnknownRoot` |
/// | `self-signed certificate`, `unable to get local issuer certificate`, any other `SSL certificate problem` | `.serverCertificateUntrusted` |
/// | the certificate names another host (`… does not match target host name`, `no alternative certificate subject name matches …`) | `.serverCertificateUntrusted` |
/// | another TLS handshake failure (`SSL connect error`, `OpenSSL SSL_connect: …`, `TLS connect error`) | `.secureConnectionFailed` |
///
/// Only errors whose code says nothing more precise are reclassified (`.unknown`,
/// `.secureConnectionFailed`, `.serverCertificateUntrusted`, the last only to a more precise
/// certificate code); the original error is kept under
/// `NSUnderlyingErrorKey` and the description is unchanged.
enum TLSFailure {
    /// `error` with the code Apple platforms give for the TLS failure it describes; any other
    /// error unchanged.
    static func classified(_ error: any Error) -> any Error {
        guard let urlError = error as? URLError else { return error }
        return classified(urlError)
    }

    /// ``classified(_:)`` for a `URLError`.
    static func classified(_ error: URLError) -> URLError {
        switch error.code {
        case .unknown, .secureConnectionFailed, .serverCertificateUntrusted:
            break
        default:
            return error
        }
        let message = (error.userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
        guard let code = code(forCurlMessage: message), code != error.code,
              // A certificate code is made more precise, never vaguer.
              !(error.code == .serverCertificateUntrusted && code == .secureConnectionFailed)
        else { return error }
        var userInfo = error.userInfo
        userInfo[NSUnderlyingErrorKey] = error as NSError
        return URLError(code, userInfo: userInfo)
    }

    /// The code Apple platforms give for the TLS failure libcurl describes in `message`; `nil`
    /// when the message is not about TLS.
    static func code(forCurlMessage message: String) -> URLError.Code? {
        let text = message.lowercased()
        // OpenSSL 3 spells "self-signed", earlier versions "self signed".
        let normalised = text.replacingOccurrences(of: "self signed", with: "self-signed")
        if normalised.contains("ssl certificate problem") || normalised.contains("ssl certificate verify") {
            if normalised.contains("certificate has expired") { return .serverCertificateHasBadDate }
            if normalised.contains("not yet valid") { return .serverCertificateNotYetValid }
            if normalised.contains("self-signed certificate in certificate chain") { return .serverCertificateHasUnknownRoot }
            return .serverCertificateUntrusted
        }
        if normalised.contains("certificate verify failed") || normalised.contains("certificate_verify_failed") {
            return .serverCertificateUntrusted
        }
        if normalised.contains("does not match target host") || normalised.contains("subject name matches target")
            || normalised.contains("no alternative certificate subject name") {
            return .serverCertificateUntrusted
        }
        if normalised.contains("ssl connect error") || normalised.contains("tls connect error")
            || normalised.contains("ssl_connect") || normalised.contains("ssl routines") {
            return .secureConnectionFailed
        }
        return nil
    }
}
