// Compiled into the peer's module by run.sh, on Linux only: Linux Foundation has no
// `URLSession.bytes(for:delegate:)`, which EventSource's client (not measured) calls. The
// benchmark never calls it; it throws if anything does.
#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking

extension URLSession {
    func bytes(for request: URLRequest, delegate: (any URLSessionTaskDelegate)?) async throws -> (NoBytes, URLResponse) {
        throw URLError(.unsupportedURL)
    }
}

/// An empty byte sequence: the type the shim's `bytes(for:delegate:)` would return.
struct NoBytes: AsyncSequence, Sendable {
    typealias Element = UInt8
    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async throws -> UInt8? { nil }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}
#endif
