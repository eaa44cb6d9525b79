import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The checks of what a caller sees whatever the transport: compressed bodies arrive decoded, a
/// degenerate one (thousands of empty gzip members) is refused as undecodable, and credentials in
/// a URL are refused rather than sent by one transport and dropped by another.
extension TransportConformance {
    static let encodingChecks: [Check] = [
        Check("content codings decoded", "Through an HTTPClient, a gzip body and a zlib-wrapped deflate body arrive decoded in response.data.") { make in
            let client = HTTPClient(transport: try await make())
            try await withLoopbackServer { server in
                for (coding, encoded) in [("gzip", EncodedSample.gzip), ("deflate", EncodedSample.deflate)] {
                    server.enqueue(.status(200, headers: ["Content-Encoding": coding, "Content-Type": "application/json"], body: encoded))
                    let response = try await client.send(URLRequest(url: server.url("/\(coding)"))).firstValue()
                    try requireEqual(response.statusCode, 200, "status of the \(coding) body")
                    try requireEqual(response.data, EncodedSample.decoded, "the \(coding) body as delivered (\(response.data.count) bytes)")
                }
            }
        },

        Check(
            "degenerate gzip refused",
            "A gzip body of one member and then 200,000 empty ones (4 MB that decode to 11 bytes) fails with URLError(.cannotDecodeContentData), having delivered no more than the first member's bytes."
        ) { make in
            let transport = try await make()
            try await withLoopbackServer { server in
                server.enqueue(.status(200, headers: ["Content-Encoding": "gzip"], body: EncodedSample.degenerateGzip))
                let recorder = PartRecorder(transport.exchange(TransportRequest(URLRequest(url: server.url("/members")))), label: "GET /members")
                try await recorder.waitForFailure(.cannotDecodeContentData)
                try require(EncodedSample.helloWorld.starts(with: recorder.body), "delivered \(recorder.byteCount) bytes that are not a prefix of the first member's")
            }
        },

        Check("credentials in the URL refused", "Through an HTTPClient, a URL with user-info fails with URLRequestError.credentialsInURL before anything is sent, and the error shows no password.") { make in
            let client = HTTPClient(transport: try await make())
            try await withLoopbackServer { server in
                let plain = server.url("/private")
                guard var components = URLComponents(url: plain, resolvingAgainstBaseURL: false) else {
                    throw ConformanceFailure(check: "", message: "no components in \(plain)")
                }
                components.user = "alice"
                components.password = "pa55word"
                guard let url = components.url else { throw ConformanceFailure(check: "", message: "no URL with user-info") }
                do {
                    let response = try await client.send(URLRequest(url: url)).firstValue()
                    throw ConformanceFailure(check: "", message: "got \(response.statusCode); expected URLRequestError.credentialsInURL")
                } catch let error as URLRequestError {
                    guard case .credentialsInURL = error else {
                        throw ConformanceFailure(check: "", message: "failed with \(error); expected .credentialsInURL")
                    }
                    try require(!"\(error)".contains("pa55word"), "the error shows the password: \(error)")
                }
                try requireEqual(server.requests.count, 0, "requests the server saw")
            }
        },
    ]
}

/// A small JSON body and its gzip and zlib encodings (made with Python's `gzip` and `zlib`).
private enum EncodedSample {
    static let decoded = Data(#"{"decoded":"by the transport","pad":""#.utf8 + Array(repeating: UInt8(ascii: "z"), count: 200) + #""}"#.utf8)
    static let gzip = Data([
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 171, 86, 74, 73, 77, 206, 79, 73, 77, 81, 178, 82, 74, 170, 84, 40, 201, 72, 85, 40,
        41, 74, 204, 43, 46, 200, 47, 42, 81, 210, 81, 42, 72, 4, 73, 84, 13, 19, 160, 84, 11, 0, 127, 101, 33, 109, 239, 0, 0, 0,
    ])
    /// "hello world" as one gzip member, followed by 200,000 empty members (20 bytes each).
    static let degenerateGzip: Data = {
        var body = Data([
            31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 203, 72, 205, 201, 201, 87, 40, 207, 47, 202, 73, 1, 0, 133, 17, 74, 13, 11, 0, 0, 0,
        ])
        let empty: [UInt8] = [31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        body.reserveCapacity(body.count + 200_000 * empty.count)
        for _ in 0..<200_000 { body.append(contentsOf: empty) }
        return body
    }()
    static let helloWorld = Data("hello world".utf8)
    static let deflate = Data([
        120, 156, 171, 86, 74, 73, 77, 206, 79, 73, 77, 81, 178, 82, 74, 170, 84, 40, 201, 72, 85, 40, 41, 74, 204, 43, 46, 200,
        47, 42, 81, 210, 81, 42, 72, 4, 73, 84, 13, 19, 160, 84, 11, 0, 215, 45, 108, 63,
    ])
}
