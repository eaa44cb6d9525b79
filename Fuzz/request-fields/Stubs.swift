// What Sources/Transit/Client/HTTPClient+Checks.swift names besides its checks (the client
// it extends, and what its `annotate` builds), so that the checks compile without the client.
// The harness calls only `HTTPClient.validate(_:)`.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

final class HTTPClient {}

final class HTTPEventSink: Sendable {}

struct TransportRequest {}

struct TransportError: Error {
    var eventSink: HTTPEventSink?
    init(request: TransportRequest, underlying: any Error) {}
}
