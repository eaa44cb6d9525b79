import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitTesting

/// A second origin (another port of 127.0.0.1), standing for a CDN: the forum redirects
/// attachment downloads to it. It records whether a request arrived with credentials — a
/// redirect to another origin must not carry the user's token.
final class AttachmentCDN: Sendable {
    static let archiveSize = 4 << 20
    /// The archive's bytes: deterministic, so the example can check what it downloaded.
    static let archive: Data = {
        let block = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        var archive = Data(capacity: archiveSize)
        for _ in 0..<(archiveSize / block.count) { archive.append(block) }
        return archive
    }()

    private let server: LoopbackServer
    private let credentialsSeen = Guarded<[String]>([])

    init() {
        let seen = credentialsSeen
        let pieces = stride(from: 0, to: Self.archiveSize, by: 64 << 10).map {
            Self.archive[$0..<min($0 + (64 << 10), Self.archiveSize)]
        }
        server = LoopbackServer(handler: { request in
            for name in ["Authorization", "Cookie"] where request.value(forHTTPHeaderField: name) != nil {
                seen.withLock { $0.append(name) }
            }
            guard request.path == "/files/forum-archive.bin" else { return .status(404) }
            // 64 pieces, 20 ms apart: about 1.3 s, slow enough to watch the progress bar.
            return .paced(pieces.map { Data($0) }, interval: .milliseconds(20), headers: ["Content-Type": "application/octet-stream"])
        })
    }

    func start() throws { try server.start() }
    func stop() { server.stop() }

    /// Where the forum redirects archive downloads.
    var archiveURL: URL { server.url("/files/forum-archive.bin") }
    /// Credential headers that reached this origin (there should be none).
    var credentialHeadersSeen: [String] { credentialsSeen.withLock { $0 } }
    var requestCount: Int { server.requests.count }
}

/// The forum's attachments: a download that the forum answers with a redirect to its CDN.
struct AttachmentService: RESTAPI {
    let baseURL: String
    let client: HTTPClient
    let tokens: TokenStore

    /// Downloads the forum archive to `destination`, with progress.
    func archive(to destination: URL) -> Signal<DownloadEvent, any Error> {
        download(endpoint: "attachments/archive", to: destination) { request in
            try request.addingBearerAuthorization(accessToken: tokens.current.accessToken)
        }
    }
}

/// Draws a progress bar on one terminal line (redrawn in place), or, when the output is not a
/// terminal, prints a line at every quarter.
final class ProgressBar: Sendable {
    private let interactive = isatty(STDOUT_FILENO) == 1
    private let lastDrawn = Guarded(-1)

    func update(_ progress: DownloadProgress) {
        draw(progress.bytesReceived, of: progress.expectedBytes)
    }

    /// The bar of an upload: the body's bytes sent.
    func update(sent progress: UploadProgress) {
        draw(progress.bytesSent, of: progress.expectedBytes)
    }

    private func draw(_ done: Int64, of expectedBytes: Int64?) {
        guard let expected = expectedBytes, expected > 0 else { return }
        let fraction = min(1, Double(done) / Double(expected))
        let percent = Int(fraction * 100)
        let step = interactive ? percent : percent / 25 * 25
        guard lastDrawn.withLock({ last in
            defer { last = max(last, step) }
            return step > last
        }) else { return }
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
        // MiB, or KiB for a body under a mebibyte.
        let (unit, divisor) = expected < 1_048_576 ? ("KiB", 1024.0) : ("MiB", 1_048_576.0)
        let size = { (bytes: Int64) in String(format: "%.1f", Double(bytes) / divisor) }
        let line = "        [\(bar)] \(String(format: "%3d", percent))%  \(size(done))/\(size(expected)) \(unit)"
        if interactive {
            print("\r\(line)", terminator: percent == 100 ? "\n" : "")
            fflush(nil) // every output stream: the line is drawn now
        } else {
            print(line)
        }
    }
}
