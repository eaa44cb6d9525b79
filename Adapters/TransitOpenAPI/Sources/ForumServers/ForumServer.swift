import Foundation

/// A running forum server on 127.0.0.1: the embedded loopback server or the generated server on
/// Hummingbird, the same behaviour behind either.
public protocol ForumServer: Sendable {
    /// The forum's behaviour and switches.
    var forum: ForumState { get }
    /// `http://127.0.0.1:<port>`.
    var baseURL: URL { get }
    /// Stops the server.
    func shutdown() async
    /// Returns `true` once the server has started sending `GET /attachments/endless`, `false`
    /// after 30 s.
    func waitUntilEndlessDownloadStarted() async -> Bool
    /// Returns `true` once the client of `GET /attachments/endless` went away, `false` after 30 s.
    func waitUntilEndlessDownloadAbandoned() async -> Bool
}

extension ForumLoopbackServer: ForumServer {
    /// Stops the server.
    public func shutdown() async { stop() }

    /// Returns `true` once the server reached the gate that holds the endless body, `false`
    /// after 30 s.
    public func waitUntilEndlessDownloadStarted() async -> Bool {
        await endless.waitUntilReached()
    }

    /// Returns `true` once a client closed its connection, `false` after 30 s.
    public func waitUntilEndlessDownloadAbandoned() async -> Bool {
        await waitUntil { self.clientClosedConnections >= 1 }
    }
}
