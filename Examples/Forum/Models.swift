import Foundation

/// A forum post, as the embedded API and JSONPlaceholder-style servers send it.
struct Post: Codable, Sendable, Equatable {
    let userId: Int
    let id: Int
    let title: String
    let body: String
}

/// What the token endpoints answer.
struct TokenResponse: Codable, Sendable {
    let accessToken: String
    let refreshToken: String
    let expiresIn: Int
}

/// What the login endpoint accepts.
struct LoginRequest: Codable, Sendable {
    let username: String
    let password: String
}

/// What the refresh endpoint accepts.
struct RefreshRequest: Codable, Sendable {
    let refreshToken: String
}
