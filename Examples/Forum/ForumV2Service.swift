import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The forum's v2 API, with its policies declared once, on its client, instead of in every
/// chain: the rate limit, shared cooldowns, host failover, coalescing of identical GETs and the
/// user's credentials belong to the client; the retry policy (with its budget) is one value every
/// chain uses. A chain is the request, the errors, the retry and the decoding — nothing else.
struct ForumV2Service: RESTAPI {
    let baseURL: String
    let client: HTTPClient
    let retry: RetryPolicy

    /// The client of the v2 API: every policy, once.
    static func makeClient(origins: [String], tokens: TokenStore, monitors: [any HTTPEventMonitor]) -> HTTPClient {
        HTTPClient {
            $0.monitors = monitors
            // At most 20 requests a second to the v2 API, 8 at once after a quiet spell; more wait.
            $0.rateLimiter = RateLimiter(requestsPerSecond: 20, burst: 8)
            // One 429/503 with Retry-After pauses every new request to the API; 3 s at most.
            $0.cooldowns = Cooldowns(maxWait: .seconds(3))
            // Identical GETs in flight share one request.
            $0.coalescesRequests = true
            // A second origin; a failed one is avoided for half a second.
            $0.failover = HostFailover(origins: origins, quarantine: .milliseconds(500))
            // The bearer token on every request to these hosts, renewed once on 401.
            $0.authorizer = tokens
        }
    }

    /// Retries transient failures twice, quickly — within a budget shared by every chain: at most
    /// a tenth of the requests (plus one per ten seconds) may be retries.
    static let retryPolicy = RetryPolicy(
        maxAttempts: 3, baseDelay: .milliseconds(50), jitter: .none,
        budget: RetryBudget(ratio: 0.1, minRetriesPerSecond: 0.1, window: .seconds(10))
    )

    /// One page of the forum's tags.
    func tags(page: Int = 1) -> Signal<TagList, any Error> {
        json(get(endpoint: "v2/tags?page=\(page)") { $0.receivingJSON() })
    }

    var popular: Signal<TagList, any Error> {
        json(get(endpoint: "v2/popular") { $0.receivingJSON() })
    }

    /// The health of one of the forum's boards.
    func status(board: Int) -> Signal<HTTPResponse, any Error> {
        get(endpoint: "v2/status?board=\(board)").catchHTTPErrors().retry(retry)
    }

    /// Sends `form`, telling `progress` how much of its body has gone out (from 0 to the whole,
    /// again from 0 if a retry sends it again), then decodes what the server received.
    func upload(_ form: MultipartFormData, progress: @escaping @Sendable (UploadProgress) -> Void) -> Signal<[ReceivedPart], any Error> {
        upload(endpoint: "v2/attachments", body: .multipart(form))
            .retry(retry)
            .compactMap { event -> HTTPResponse? in
                switch event {
                case .progress(let sent):
                    progress(sent)
                    return nil
                case .completed(let response):
                    return response
                }
            }
            .map(\.data)
            .decode([ReceivedPart].self, decoder: JSONDecoder())
    }

    /// The chain every endpoint shares: errors, the retry policy, the 429 this request itself met
    /// (the cooldown holds back the others), the decoding.
    private func json<T: Decodable & Sendable>(_ request: Signal<HTTPResponse, any Error>) -> Signal<T, any Error> {
        request
            .catchHTTPErrors()
            .retry(retry)
            .respondToRateLimiting(maxWait: .seconds(3))
            .map(\.data)
            .decode(T.self, decoder: JSONDecoder())
    }
}
