import AsyncHTTPClient
import ForumAPI
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Transit
import TransitAsyncHTTPClient
import TransitOpenAPI

// `swift run -c release --package-path Adapters/TransitOpenAPI openapi-bench --url http://127.0.0.1:PORT`
//
// Requests per second of the generated forum client's `listPosts` (a ~14 KB JSON array decoded
// into the generated types) on two transports, in the same process, rounds alternating:
// Transit's `TransitClientTransport` over its AsyncHTTPClient transport, every policy off, and
// swift-openapi-async-http-client's transport on AsyncHTTPClient's shared client. Both clients get
// the same middleware, which sends `/posts` to the nginx benchmark server's `/json`
// (Benchmarks/nginx/nginx.sh).

/// Sends the generated `GET /posts` to the benchmark server's JSON file.
struct ToBenchmarkFile: ClientMiddleware {
    func intercept(
        _ request: HTTPTypes.HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, URL) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?) {
        var request = request
        request.path = "/json"
        return try await next(request, body, baseURL)
    }
}

var url: URL?
var requests = 20_000
var rounds = 7
var concurrency = 8
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--url": url = arguments.popFirst().flatMap { URL(string: $0) }
    case "--requests": requests = arguments.popFirst().flatMap { Int($0) } ?? requests
    case "--rounds": rounds = arguments.popFirst().flatMap { Int($0) } ?? rounds
    case "--concurrency": concurrency = arguments.popFirst().flatMap { Int($0) } ?? concurrency
    default:
        print("usage: openapi-bench --url URL [--requests N] [--rounds R] [--concurrency C]")
        exit(2)
    }
}
guard let url else {
    print("usage: openapi-bench --url URL [--requests N] [--rounds R] [--concurrency C]")
    exit(2)
}

let contenders: [(name: String, client: Client)] = [
    ("Transit (TransitClientTransport, AsyncHTTPClient transport)", Client(
        serverURL: url,
        transport: TransitClientTransport(client: Transit.HTTPClient(transport: TransitAsyncHTTPClient.AsyncHTTPClientTransport.shared)),
        middlewares: [ToBenchmarkFile()]
    )),
    ("swift-openapi-async-http-client", Client(
        serverURL: url,
        transport: OpenAPIAsyncHTTPClient.AsyncHTTPClientTransport(),
        middlewares: [ToBenchmarkFile()]
    )),
]

/// Requests per second of `client` over `count` requests, `concurrency` at a time.
func measure(_ client: Client, count: Int, concurrency: Int) async throws -> Double {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<concurrency {
            let share = count / concurrency + (worker < count % concurrency ? 1 : 0)
            group.addTask {
                for _ in 0..<share {
                    let posts = try await client.listPosts().ok.body.json
                    precondition(posts.count == 100)
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(count) / seconds
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

// Warm-up: connections, caches, the JSON decoder.
for contender in contenders { _ = try await measure(contender.client, count: min(2_000, requests), concurrency: concurrency) }

var results = Array(repeating: [Double](), count: contenders.count)
for round in 1...rounds {
    // Alternate which contender goes first.
    let order = round % 2 == 1 ? Array(contenders.indices) : Array(contenders.indices.reversed())
    for index in order {
        results[index].append(try await measure(contenders[index].client, count: requests, concurrency: concurrency))
    }
    print("round \(round): " + contenders.indices.map { "\(Int(results[$0].last!)) req/s" }.joined(separator: ", "))
}
for (index, contender) in contenders.enumerated() {
    print("\(contender.name): median \(Int(median(results[index]))) req/s (\(Int(results[index].min()!))–\(Int(results[index].max()!)))")
}
let ratios = zip(results[0], results[1]).map { $0 / $1 }
print(String(format: "ratio Transit / peer: median %.3f (%.3f–%.3f) over %d rounds", median(ratios), ratios.min()!, ratios.max()!, rounds))
