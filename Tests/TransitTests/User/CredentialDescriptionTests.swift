import Foundation
import Signals
import Testing
import Transit

/// Credentials never appear in what a program prints about the objects that hold them:
/// `description`, `debugDescription`, string interpolation or `dump`.
struct CredentialDescriptionTests {
    private static let token = AuthToken(accessToken: "AT-s3cr3t-access", refreshToken: "RT-s3cr3t-refresh", expiresAt: Date(timeIntervalSince1970: 0))

    private func renderings(of value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped]
    }

    @Test func anAuthTokenShowsNoTokenValue() {
        for text in renderings(of: Self.token) {
            #expect(!text.contains("s3cr3t"), "\(text)")
        }
        // What is not secret still shows, so a log says which token it was about.
        #expect(String(describing: Self.token).contains("expiresAt"))
    }

    @Test func aTokenStoreShowsNoTokenValue() {
        let store = TokenStore(token: Self.token, scope: CredentialScope(hosts: ["api.example.com"])) { _ in Signal(value: Self.token) }
        for text in renderings(of: store) {
            #expect(!text.contains("s3cr3t"), "\(text)")
        }
    }
}
