import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// What it takes to continue an interrupted download: the URL, the validator of the
/// representation, how many of its bytes are on disk and where they are.
///
/// A download (``HTTPClient/download(_:to:options:)``) whose transfer fails mid-body keeps the
/// bytes it wrote, in a hidden partial file beside the destination, when the response allowed a
/// byte-range resume: status 200 (or 206 to a resume), `Accept-Ranges: bytes`, a strong `ETag`
/// (else a `Last-Modified` date), a known length, and no `Content-Encoding` (a compressed
/// representation is never resumed byte-wise). The value is then available three ways:
/// - from the failure, with ``init(failure:)``;
/// - from the disk, with ``kept(for:)`` (after a relaunch, for instance);
/// - implicitly: the next download of the same URL to the same destination (a `retry` of the
///   same signal, or a new one) continues it.
///
/// It is `Codable`: store it, and continue with ``HTTPClient/download(resuming:to:options:)``,
/// also from a new process and a new client.
///
/// It holds no request header: no `Authorization`, no cookie. The request that continues the
/// download is a GET of ``url`` that goes through the client like any other, so the client's
/// default headers and authoriser add the credentials again.
public struct DownloadResumeData: Codable, Sendable, Hashable {
    /// The URL that was requested.
    public let url: URL
    /// The strong `ETag` of the representation, or its `Last-Modified` date when it had no strong
    /// `ETag`: sent as `If-Range`, so a changed representation is fetched whole again.
    let validator: String
    /// How many bytes of the representation are in the partial file. More than zero and fewer
    /// than ``totalBytes``.
    public let bytesOnDisk: Int64
    /// The length of the whole representation.
    public let totalBytes: Int64
    /// The hidden partial file, beside the destination the download was writing to.
    public let partialFile: URL

    init(url: URL, validator: String, bytesOnDisk: Int64, totalBytes: Int64, partialFile: URL) {
        self.url = url
        self.validator = validator
        self.bytesOnDisk = bytesOnDisk
        self.totalBytes = totalBytes
        self.partialFile = partialFile
    }

    private enum CodingKeys: String, CodingKey {
        case url, validator, bytesOnDisk, totalBytes, partialFile
    }

    /// Decodes a value and checks it: an `http`/`https` URL, a validator that can be sent as a
    /// header, a byte count between the two bounds and a partial file named as Transit names
    /// them. Anything else throws `DecodingError.dataCorrupted`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(URL.self, forKey: .url)
        validator = try container.decode(String.self, forKey: .validator)
        bytesOnDisk = try container.decode(Int64.self, forKey: .bytesOnDisk)
        totalBytes = try container.decode(Int64.self, forKey: .totalBytes)
        partialFile = try container.decode(URL.self, forKey: .partialFile)
        guard isWellFormed else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "Not the resume data of a download: the URL, the validator, the byte counts or the partial file's name is invalid."
            ))
        }
    }

    /// The resume data an interrupted download's failure carries (its ``TransportError``'s
    /// ``TransportError/resumeData``), or `nil` when the download could not be resumed (the
    /// failure came before a resumable head, or the response did not allow it) or `error` is not
    /// a download's failure.
    public init?(failure error: any Error) {
        guard let data = (error as? TransportError)?.resumeData else { return nil }
        self = data
    }

    /// `error` carrying this resume data in ``TransportError/resumeData``: a ``TransportError``
    /// gets it; a bare `URLError` (a transfer that failed in the transport) is wrapped in one for
    /// `request`, the request the download sent; another error (the disk's) is returned as it is.
    func attached(to error: any Error, request: TransportRequest) -> any Error {
        if var transportError = error as? TransportError {
            transportError.resumeData = self
            return transportError
        }
        if error is URLError {
            var wrapped = TransportError(request: request, underlying: error)
            wrapped.resumeData = self
            return wrapped
        }
        return error
    }
}
