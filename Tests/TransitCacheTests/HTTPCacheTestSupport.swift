import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
import Transit
@testable import TransitCache
import TransitTesting

/// A caching transport in front of a stub transport, on a disk cache whose clock is a
/// `TestScheduler`'s virtual time, with the cache's events recorded.
final class HTTPCacheFixture: Sendable {
    /// The virtual wall-clock time at the scheduler's zero: 2027-01-15 08:00:00 UTC.
    static let origin = Date(timeIntervalSince1970: 1_800_000_000)

    let folder: TemporaryFolder
    let scheduler = TestScheduler()
    let records: DiskCache
    let cache: HTTPCache
    let stub = StubTransport()
    let transport: any HTTPTransport
    private let recorded = Locked<[HTTPCacheEvent]>([])
    private let token: CancellationToken

    init(maximumRecordSize: Int? = nil, maximumHeuristicLifetime: Duration = .seconds(86_400)) throws {
        folder = try TemporaryFolder()
        records = try DiskCache(directory: folder.url, configuration: .init(
            maximumRecordSize: maximumRecordSize, clock: .following(scheduler, from: HTTPCacheFixture.origin)
        ))
        cache = HTTPCache(records: records, maximumHeuristicLifetime: maximumHeuristicLifetime)
        transport = stub.caching(in: cache)
        let recorded = self.recorded
        token = cache.events.sink { event in recorded.withLock { $0.append(event) } }
    }

    var events: [HTTPCacheEvent] { recorded.withLock { $0 } }

    /// The number of requests that reached the stub (the network).
    var networkRequests: Int { stub.requests.count }

    /// The current virtual time as an HTTP-date (for `Date` headers).
    var now: String { httpDate(HTTPCacheFixture.origin.addingTimeInterval(scheduler.now.timeInterval)) }

    /// Sends a request through the caching transport and returns the buffered response.
    func send(_ path: String, method: String = "GET", headers: [String: String] = [:]) async throws -> HTTPResponse {
        try await transport.send(request(path, method: method, headers: headers)).firstValue()
    }

    /// Sends a request and returns its parts, in order.
    func parts(_ path: String, method: String = "GET", headers: [String: String] = [:]) async throws -> [HTTPResponsePart] {
        var parts: [HTTPResponsePart] = []
        for try await part in transport.exchange(TransportRequest(request(path, method: method, headers: headers))).values {
            parts.append(part)
        }
        return parts
    }

    func request(_ path: String, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: url(path))
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func url(_ path: String) -> URL {
        URL(string: "https://api.example.com\(path)")!
    }
}

/// `date` as an IMF-fixdate.
func httpDate(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}

extension HTTPResponsePart {
    var bodyChunk: Data? {
        if case .body(let data) = self { return data }
        return nil
    }
}
