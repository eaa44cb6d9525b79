import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// `URLSessionTransport(downloadTasks: true)`: `URLSession` writes a download task's body to a
/// file of its own in the system's temporary folder and hands it to the delegate. Apple's
/// Foundation removes that file once the delegate returns; Linux Foundation leaves it, so a body
/// the transport does not move into place (an error status, a failed or cancelled download) must
/// be removed by the transport, or every such response leaves a file behind. Where Foundation
/// never hands the file over (a challenged 401), the transport cannot reach it: a known issue.
@Suite("URLSessionTransport: download task files")
struct DownloadTaskFileTests {
    /// The system temporary folder's files whose bytes are `marker`.
    private static func files(containing marker: Data) -> [String] {
        let folder = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { name in
            let path = folder.appendingPathComponent(name).path
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size == marker.count else { return false }
            return FileManager.default.contents(atPath: path) == marker
        }
    }

    @Test(arguments: [
        (403, [String: String]()),
        (401, ["WWW-Authenticate": #"Basic realm="tests""#]),
        (407, ["Proxy-Authenticate": #"Basic realm="proxy""#]),
    ])
    func theBodyOfAFailedDownloadTaskLeavesNoFileInTheTemporaryFolder(status: Int, headers: [String: String]) async throws {
        let transport = URLSessionTransport(configuration: .loopbackTests(), downloadTasks: true)
        let client = HTTPClient(transport: transport)
        let folder = try makeDownloadFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let marker = Data("error body \(UUID().uuidString)".utf8)
        try await withLoopbackServer(handler: { _ in .status(status, headers: headers, body: marker) }) { server in
            let probe = AwaitedProbe(client.download(URLRequest(url: server.url("/private")), to: folder.appendingPathComponent("file")))
            try #require(await probe.ended.wait(timeout: .seconds(10)), "the download of a \(status) did not end")
            #expect((probe.failure as? HTTPClientError)?.statusCode == status)
            // The task is forgotten only after URLSession handed its file over and completed it.
            #expect(await eventually(timeout: .seconds(10)) { transport.activeTaskCount == 0 })
            if status == 401 {
                // Linux Foundation ends a challenged 401's download task without handing its file
                // over (the transport documents it, `writesResponseBodiesToFiles`).
                withKnownIssue("Linux Foundation keeps the file of a challenged 401's download task", isIntermittent: true) {
                    #expect(Self.files(containing: marker).isEmpty)
                }
            } else {
                #expect(Self.files(containing: marker).isEmpty, "URLSession's file of the error body was left in the temporary folder")
            }
            // What Foundation left is this test's alone (its bytes carry a fresh UUID): removed.
            for name in Self.files(containing: marker) {
                try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent(name))
            }
        }
    }
}
