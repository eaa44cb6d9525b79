import ForumAPI
import ForumServers
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing
import Transit
import TransitOpenAPI

/// The same generated client on swift-openapi-async-http-client's transport, for comparison: it
/// keeps only the last of a repeated response field, where Transit's transport keeps them all
/// (``GeneratedClientScenarioTests/repeatedResponseFieldsKept(server:)``).
@Suite(.timeLimit(.minutes(1)))
struct PeerComparisonTests {
    @Test("swift-openapi-async-http-client drops all but the last repeated response field", arguments: ServerKind.allCases)
    func peerDropsRepeatedResponseFields(server kind: ServerKind) async throws {
        try await withServer(kind) { server in
            let tokens = try #require(server.forum.login(username: "ada", password: "lovelace"))
            let recorder = ResponseFieldRecorder()
            let peer = Client(
                serverURL: server.baseURL,
                transport: OpenAPIAsyncHTTPClient.AsyncHTTPClientTransport(),
                middlewares: [
                    AddingRequestFields(fields: [HTTPTypes.HTTPField(name: .authorization, value: "Bearer \(tokens.accessToken)")]),
                    recorder,
                ]
            )
            _ = try await peer.listPosts().ok
            let links = recorder.fields.last?[values: HTTPTypes.HTTPField.Name("Link")!]
            #expect(links == [ForumState.postLinks[1]])
            #expect(links != ForumState.postLinks)
        }
    }
}
