import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Changes a request before it is sent. Runs inside the subscription, on every attempt, so a
/// retried request reads fresh state (a new access token, a new timestamp). Throwing fails the
/// signal with the thrown error and sends nothing.
public typealias RequestModifier = @Sendable (URLRequest) throws -> URLRequest

/// A REST service: a base URL and the client that sends its requests.
///
/// Conform a type and build request signals with the verbs:
///
/// ```swift
/// struct LivePostService: RESTAPI {
///     let baseURL: String
///     let client: HTTPClient
///
///     var posts: Signal<[Post], any Error> {
///         get(endpoint: "posts") { $0.receivingJSON() }
///             .catchHTTPErrors()
///             .map(\.data)
///             .decode([Post].self, decoder: JSONDecoder())
///     }
/// }
/// ```
///
/// Every verb returns a cold signal: nothing is sent until it is subscribed, and every
/// subscription (every retry) builds the URL, runs the modifier and sends again. A base URL
/// without an http(s) scheme and a host, or an endpoint that cannot form a URL, fails the signal
/// with `URLError(.badURL)` and sends nothing.
public protocol RESTAPI: Sendable {
    /// The service's base URL, such as `https://api.example.com/v1`. Endpoints are appended to it.
    var baseURL: String { get }
    /// The client that sends the requests. ``HTTPClient/shared`` unless the service names one.
    var client: HTTPClient { get }
}

extension RESTAPI {
    public var client: HTTPClient { .shared }

    /// A signal that sends a request with any method.
    ///
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - endpoint: a path relative to ``baseURL``, which may carry a query (`posts?userId=1`).
    ///   - body: the request body, if any.
    ///   - modifier: changes the request before every attempt.
    public func request(
        method: HTTPMethod,
        endpoint: String,
        body: Data? = nil,
        modifier: @escaping RequestModifier = { $0 }
    ) -> Signal<HTTPResponse, any Error> {
        let baseURL = self.baseURL
        let client = self.client
        return Signal(tryDeferred: {
            var request = URLRequest(url: try URLBuilder.url(base: baseURL, endpoint: endpoint))
            request.httpMethod = method.rawValue
            request.httpBody = body
            return client.send(try modifier(request))
        })
    }

    /// A GET request. See ``request(method:endpoint:body:modifier:)``.
    public func get(endpoint: String, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .get, endpoint: endpoint, modifier: modifier)
    }

    /// A HEAD request. See ``request(method:endpoint:body:modifier:)``.
    public func head(endpoint: String, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .head, endpoint: endpoint, modifier: modifier)
    }

    /// A DELETE request. See ``request(method:endpoint:body:modifier:)``.
    public func delete(endpoint: String, body: Data? = nil, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .delete, endpoint: endpoint, body: body, modifier: modifier)
    }

    /// A POST request. See ``request(method:endpoint:body:modifier:)``.
    public func post(endpoint: String, body: Data? = nil, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .post, endpoint: endpoint, body: body, modifier: modifier)
    }

    /// A PUT request. See ``request(method:endpoint:body:modifier:)``.
    public func put(endpoint: String, body: Data? = nil, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .put, endpoint: endpoint, body: body, modifier: modifier)
    }

    /// A PATCH request. See ``request(method:endpoint:body:modifier:)``.
    public func patch(endpoint: String, body: Data? = nil, modifier: @escaping RequestModifier = { $0 }) -> Signal<HTTPResponse, any Error> {
        request(method: .patch, endpoint: endpoint, body: body, modifier: modifier)
    }
}
