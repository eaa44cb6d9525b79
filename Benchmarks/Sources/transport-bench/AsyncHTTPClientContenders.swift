// The AsyncHTTPClient contenders of transport-bench: raw AsyncHTTPClient (SwiftNIO) and the
// README's PostService chain on Transit's AsyncHTTPClient adapter (Adapters/TransitAsyncHTTPClient).
// In their own file because AsyncHTTPClient's `HTTPClient` would shadow Transit's elsewhere.
import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import Signals
import Synchronization
import Transit
import TransitAsyncHTTPClient

/// One AsyncHTTPClient client for the raw contender, with the configuration the adapter uses
/// (redirects and connection retries left to the caller), so both keep one pool of connections
/// each and differ only in what runs above the pool.
let rawAsyncHTTPClient = AsyncHTTPClient.HTTPClient(
    eventLoopGroup: AsyncHTTPClient.HTTPClient.defaultEventLoopGroup,
    configuration: AsyncHTTPClientTransport.defaultConfiguration
)

/// Raw AsyncHTTPClient: the same request (URL, `Authorization`, `Accept`), built per request,
/// sent with `execute(request:)` (the body collected by AsyncHTTPClient), its status and size
/// checked.
func rawAsyncHTTPClientStart(url: String) -> StartRequest {
    { done in
        do {
            let request = try AsyncHTTPClient.HTTPClient.Request(
                url: url,
                method: .GET,
                headers: ["Authorization": "Bearer \(bearerToken)", "Accept": "application/json"]
            )
            rawAsyncHTTPClient.execute(request: request).whenComplete { result in
                switch result {
                case .success(let response) where response.status == .ok:
                    done(response.body?.readableBytes ?? 0)
                case .success(let response):
                    FileHandle.standardError.write(Data("raw AsyncHTTPClient: status \(response.status.code)\n".utf8))
                    done(-1)
                case .failure(let error):
                    FileHandle.standardError.write(Data("raw AsyncHTTPClient failed: \(error)\n".utf8))
                    done(-1)
                }
            }
        } catch {
            FileHandle.standardError.write(Data("raw AsyncHTTPClient request refused: \(error)\n".utf8))
            done(-1)
        }
    }
}

/// The README chain on a client whose transport is the adapter.
func asyncHTTPClientChain(base: String) -> BenchPostService {
    BenchPostService(
        baseURL: base,
        client: Transit.HTTPClient(transport: AsyncHTTPClientTransport()),
        tokens: TokenStore(token: AuthToken(accessToken: bearerToken)) { current in Signal(value: current) }
    )
}

/// The README service with every policy on (``BenchPolicyService``), on the adapter: with
/// AsyncHTTPClient's own cost small and steady, the policies' cost stands out in callgrind.
func asyncHTTPClientPolicies(base: String) -> BenchPolicyService {
    BenchPolicyService.make(base: base, transport: AsyncHTTPClientTransport())
}

/// The request declared on the client, on the adapter: the authoriser adds the token and a
/// default header asks for JSON, so the chain has no per-call modifier — the shape whose cost
/// is compared with raw AsyncHTTPClient.
func asyncHTTPClientDeclared(base: String) -> BenchDeclaredService {
    declaredOnClient(base: base, transport: AsyncHTTPClientTransport())
}

/// The request declared on the client, on `transport`.
func declaredOnClient(base: String, transport: any HTTPTransport, monitors: [any HTTPEventMonitor] = []) -> BenchDeclaredService {
    let tokens = TokenStore(
        token: AuthToken(accessToken: bearerToken),
        scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
    ) { current in Signal(value: current) }
    let client = Transit.HTTPClient(transport: transport) {
        $0.defaultHeaders = ["Accept": "application/json"]
        $0.authorizer = tokens
        $0.monitors = monitors
    }
    return BenchDeclaredService(baseURL: base, client: client)
}

/// A Transit client on the adapter, for the 1 GiB stream.
func asyncHTTPClientStreamingClient() -> Transit.HTTPClient {
    Transit.HTTPClient(transport: AsyncHTTPClientTransport())
}

/// The adapter alone: its exchange collected, with no client above it, so the adapter's own cost
/// and the client's can be told apart.
func asyncHTTPClientTransport() -> AsyncHTTPClientTransport {
    AsyncHTTPClientTransport()
}

/// The adapter's exchange with nothing above it: the request made of its own fields (as the
/// client hands it to a transport), its parts observed as they stream, the body's bytes counted.
/// What this costs beyond raw AsyncHTTPClient is the adapter's own floor: a Transit client on the
/// adapter cannot cost less.
func asyncHTTPClientExchangeStart(_ transport: AsyncHTTPClientTransport, url: URL, slot: TokenSlot) -> StartRequest {
    { done in
        let request = TransportRequest(
            url: url,
            headerFields: [
                HTTPField(name: "Authorization", value: "Bearer \(bearerToken)"),
                HTTPField(name: "Accept", value: "application/json"),
            ]
        )
        let state = Mutex((status: 0, bytes: 0))
        let token = CancellationToken()
        slot.hold(token)
        transport.exchange(request).observe(Observer { event in
            switch event {
            case .value(.head(let head)): state.withLock { $0.status = head.statusCode }
            case .value(.body(let chunk)): state.withLock { $0.bytes += chunk.count }
            case .finished:
                let (status, bytes) = state.withLock { ($0.status, $0.bytes) }
                done(status == 200 ? bytes : -1)
            case .failed(let error):
                FileHandle.standardError.write(Data("adapter exchange failed: \(error)\n".utf8))
                done(-1)
            }
        }, in: token)
    }
}
