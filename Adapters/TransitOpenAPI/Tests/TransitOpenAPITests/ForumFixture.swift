import AsyncHTTPClient
import ForumAPI
import ForumServers
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Signals
import Transit
import TransitAsyncHTTPClient
import TransitOpenAPI
import Synchronization
import Testing
import HTTPTypes

/// Which server a scenario runs against.
enum ServerKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The forum example's routes on Transit's loopback server.
    case loopback
    /// The generated server on Hummingbird.
    case hummingbird

    var testDescription: String { rawValue }

    func start() async throws -> any ForumServer {
        switch self {
        case .loopback:
            let server = ForumLoopbackServer()
            try server.start()
            return server
        case .hummingbird:
            return try await ForumHummingbirdServer.start()
        }
    }
}

/// Which of Transit's transports the client sends with.
enum NetworkKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    var testDescription: String { rawValue }

    var transport: any HTTPTransport {
        switch self {
        case .urlSession: URLSessionTransport.shared
        case .asyncHTTPClient: TransitAsyncHTTPClient.AsyncHTTPClientTransport.shared
        }
    }
}

/// Runs `body` with a started server, and stops it afterwards.
func withServer<R>(_ kind: ServerKind, _ body: (any ForumServer) async throws -> R) async throws -> R {
    let server = try await kind.start()
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// A generated client signed in as ada: its `HTTPClient` has a `TokenStore` authoriser whose
/// renewal goes through a second generated client without one.
struct SignedInForum {
    let client: Client
    let http: Transit.HTTPClient
    let tokens: TokenStore

    init(
        server: any ForumServer,
        network: NetworkKind,
        configureClient: (inout Transit.HTTPClient.Configuration) -> Void = { _ in },
        configureTransport: (inout TransitClientTransport.Configuration) -> Void = { _ in },
        middlewares: [any ClientMiddleware] = []
    ) async throws {
        let plain = Client(serverURL: server.baseURL, transport: TransitClientTransport(client: Transit.HTTPClient(transport: network.transport)))
        let issued = try await plain.login(body: .json(.init(username: "ada", password: "lovelace"))).ok.body.json
        let tokens = TokenStore(
            token: AuthToken(accessToken: issued.accessToken, refreshToken: issued.refreshToken),
            scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)
        ) { current in
            Signal(operation: {
                let renewed = try await plain.refreshToken(body: .json(.init(refreshToken: current.refreshToken ?? ""))).ok.body.json
                return AuthToken(accessToken: renewed.accessToken, refreshToken: renewed.refreshToken)
            })
        }
        let http = Transit.HTTPClient(transport: network.transport) {
            $0.authorizer = tokens
            configureClient(&$0)
        }
        self.client = Client(
            serverURL: server.baseURL,
            transport: TransitClientTransport(client: http, configure: configureTransport),
            middlewares: middlewares
        )
        self.http = http
        self.tokens = tokens
    }
}

/// Records the header fields of every response a generated client receives, as its transport
/// delivered them.
final class ResponseFieldRecorder: ClientMiddleware {
    private let recorded = Mutex<[HTTPFields]>([])

    var fields: [HTTPFields] { recorded.withLock { $0 } }

    func intercept(
        _ request: HTTPTypes.HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, URL) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?) {
        let (response, body) = try await next(request, body, baseURL)
        recorded.withLock { $0.append(response.headerFields) }
        return (response, body)
    }
}

/// Adds header fields to every request a generated client sends.
struct AddingRequestFields: ClientMiddleware {
    let fields: [HTTPTypes.HTTPField]

    func intercept(
        _ request: HTTPTypes.HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, URL) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields.append(contentsOf: fields)
        return try await next(request, body, baseURL)
    }
}

/// An empty folder of its own under the system's temporary folder.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("transit-openapi-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
