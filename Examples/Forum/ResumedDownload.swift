import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitTesting

/// A download that loses its connection half-way and continues where it stopped: the server
/// serves byte ranges, so the retry asks only for the second half (`Range` with `If-Range`), and
/// the progress bar goes on from 50 %.
func demonstrateResumedDownload(narrator: Narrator, check: (Bool, String) -> Void) async {
    let archive = AttachmentCDN.archive
    let half = archive.count / 2
    let attempts = Guarded(0)
    let server = LoopbackServer(handler: { request in
        let attempt = attempts.withLock { count in
            count += 1
            return count
        }
        let response = LoopbackResponse.ranged(archive, for: request, etag: "\"archive-v1\"")
        // The first transfer loses its connection after half the body.
        return attempt == 1 ? response.closingMidBody(afterBytes: half) : response
    })
    do {
        try server.start()
    } catch {
        check(false, "the embedded file server started (\(error))")
        return
    }
    defer { server.stop() }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-forum-resume-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let destination = folder.appendingPathComponent("forum-archive.bin")
    let bar = ProgressBar()
    var downloaded: DownloadedFile?
    do {
        // `retry` subscribes again: the download finds the half kept beside the destination.
        let download = HTTPClient.shared.download(URLRequest(url: server.url("/files/forum-archive.bin")), to: destination)
            .handleEvents(receiveCompletion: { completion in
                if case .failure(let error) = completion, let resume = DownloadResumeData(failure: error) {
                    narrator.say("interrupted with \(resume.bytesOnDisk) of \(resume.totalBytes) bytes on disk; retrying")
                }
            })
            .retry(1)
        for try await event in download.values {
            switch event {
            case .progress(let progress): bar.update(progress)
            case .completed(let file): downloaded = file
            }
        }
    } catch {
        narrator.say("download failed: \(error)")
    }
    let requests = server.requests
    narrator.say("[server] second request: Range: \(requests.last?.value(forHTTPHeaderField: "Range") ?? "none"), If-Range: \(requests.last?.value(forHTTPHeaderField: "If-Range") ?? "none")")
    narrator.say("[server] body bytes sent in all: \(server.sentBodyByteCount) for a \(archive.count)-byte file")
    check(downloaded?.byteCount == Int64(archive.count) && (try? Data(contentsOf: destination)) == archive,
          "the interrupted archive arrived whole")
    check(requests.count == 2 && requests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(half)-" && server.sentBodyByteCount == archive.count,
          "the retry asked only for the second half; no byte was sent twice")
}
