import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The checks of authentication challenges: a transport never answers a challenge itself, it
/// delivers the response that carries it.
extension TransportConformance {
    static let challengeChecks: [Check] = [
        Check("challenge delivered", "A 401/407 with a Basic challenge arrives as a response promptly, as do Digest, Bearer and unknown schemes: status, headers and body, one request, no credential sent.") { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                let cases: [(status: Int, field: String, challenge: String)] = [
                    (401, "WWW-Authenticate", #"Basic realm="conformance", charset="UTF-8""#),
                    (407, "Proxy-Authenticate", #"Basic realm="proxy""#),
                    (401, "WWW-Authenticate", #"Digest realm="conformance", qop="auth", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#),
                    (401, "WWW-Authenticate", #"Bearer realm="api", error="invalid_token""#),
                    (401, "WWW-Authenticate", "Newauth realm=\"apps\", type=1"),
                ]
                for (index, (status, field, challenge)) in cases.enumerated() {
                    let scheme = String(challenge.prefix { $0 != " " })
                    let label = "\(status) with a \(scheme) challenge"
                    let body = Data("\(label): sign in".utf8)
                    server.enqueue(.status(status, headers: [field: challenge, "X-Case": "\(index)"], body: body))
                    // Promptly: within the check's bound for any event, far below the idle timeout or
                    // the deadline that a transport waiting on the challenge runs into. Timed where
                    // the end is delivered: on a loaded machine the check's task may resume later.
                    let start = ContinuousClock.now
                    let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/private/\(index)")))), label: label)
                    let (head, received) = try await recorder.waitForSuccess()
                    let elapsed = (recorder.endedAt ?? .now) - start
                    try require(elapsed < ConformanceTimeout.event, "\(label) took \(elapsed)")
                    try requireEqual(head.statusCode, status, "status of the \(label)")
                    try requireEqual(head.value(forHTTPHeaderField: field), challenge, "\(field) of the \(label)")
                    try requireEqual(head.value(forHTTPHeaderField: "X-Case"), "\(index)", "X-Case of the \(label)")
                    try requireEqual(received, body, "body of the \(label)")
                }
                let requests = server.requests
                try requireEqual(requests.count, cases.count, "requests the server saw (a challenge answered by the transport sends another)")
                for request in requests {
                    try require(request.value(forHTTPHeaderField: "Authorization") == nil, "Authorization sent to \(request.path)")
                    try require(request.value(forHTTPHeaderField: "Proxy-Authorization") == nil, "Proxy-Authorization sent to \(request.path)")
                }
            }
        },

        Check("challenge through the client", "Through an HTTPClient, a 401 with a Basic challenge is a buffered response, a stream and a failed download that carries the HTTPClientError, each promptly.") { make in
            let transport = try await make()
            let client = HTTPClient(transport: transport)
            try await withLoopbackServer(handler: { _ in
                .status(401, headers: ["WWW-Authenticate": #"Basic realm="client""#], body: Data("who are you?".utf8))
            }) { server in
                let bound = ConformanceTimeout.event
                let buffered = Locked<Result<HTTPResponse, any Error>?>(nil)
                let bufferedEnded = AsyncCondition()
                let bufferedToken = client.send(URLRequest(url: server.url("/buffered"))).observe(Observer { event in
                    switch event {
                    case .value(let response): buffered.withLock { $0 = .success(response) }
                    case .finished: break
                    case .failed(let error): buffered.withLock { $0 = .failure(error) }
                    }
                    bufferedEnded.signal()
                })
                defer { bufferedToken.cancel() }
                try require(await bufferedEnded.waitUntil(timeout: bound) { buffered.withLock { $0 != nil } }, "the buffered 401 did not arrive within \(bound)")
                let response = try buffered.withLock { $0 }!.get()
                try requireEqual(response.statusCode, 401, "status of the buffered response")
                try requireEqual(response.text, "who are you?", "body of the buffered response")

                let streamed = PartRecorder(client.stream(URLRequest(url: server.url("/streamed"))), label: "the streamed 401")
                let (head, body) = try await streamed.waitForSuccess(timeout: bound)
                try requireEqual(head.statusCode, 401, "status of the stream")
                try requireEqual(body, Data("who are you?".utf8), "body of the stream")

                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-conformance-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let destination = folder.appendingPathComponent("file.bin")
                let download = client.download(URLRequest(url: server.url("/download")), to: destination)
                let ended = AsyncCondition()
                let outcome = Locked<Completion<any Error>?>(nil)
                let token = download.observe(Observer { event in
                    switch event {
                    case .value: return
                    case .finished: outcome.withLock { $0 = .finished }
                    case .failed(let error): outcome.withLock { $0 = .failure(error) }
                    }
                    ended.signal()
                })
                defer { token.cancel() }
                try require(await ended.waitUntil(timeout: bound) { outcome.withLock { $0 != nil } }, "the download of a 401 did not end within \(bound)")
                guard case .failure(let error)? = outcome.withLock({ $0 }) else {
                    throw ConformanceFailure(check: "", message: "the download of a 401 succeeded; expected HTTPClientError")
                }
                guard let httpError = error as? any HTTPError else {
                    throw ConformanceFailure(check: "", message: "the download of a 401 failed with \(describe(error)); expected HTTPClientError")
                }
                try requireEqual(httpError.statusCode, 401, "status of the download's error")
                try require(!FileManager.default.fileExists(atPath: destination.path), "the download of a 401 left a file at the destination")
            }
        },
    ]
}
